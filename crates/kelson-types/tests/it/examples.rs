//! The test-vector gate: every official example message decodes into our type for its folder,
//! re-encodes to the same JSON (key order aside), and our encoding validates against the schema's
//! definition of that type.
//!
//! The examples are `tests/spec/examples/<TypeName>/*.json` and the schema (JSON Schema 2020-12)
//! `tests/spec/schema.json`, copied byte for byte from the specification repository's
//! `schema/2026-07-28/` (`tests/spec/README.md` names the commit).

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use kelson_types::*;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

/// The number of example files upstream ships for 2026-07-28.
const EXPECTED_FILES: usize = 129;

/// Decodes an example as a type, checks the decoded variant when the table asks, and re-encodes it.
type Codec = fn(&Value) -> Result<Value, String>;

fn round_trip<T: Serialize + DeserializeOwned>(
    original: &Value,
    expected_variant: fn(&T) -> bool,
) -> Result<Value, String> {
    let typed: T = serde_json::from_value(original.clone()).map_err(|e| format!("decode: {e}"))?;
    if !expected_variant(&typed) {
        return Err("decoded into the wrong variant".into());
    }
    serde_json::to_value(&typed).map_err(|e| format!("encode: {e}"))
}

/// The one explicit table from example folder (a schema type name) to our Rust type.
///
/// A folder whose schema type is a variant of one of our enums names the enum and the variant
/// expected: the bare content structs carry no `type` tag (the enum writes it), and the schema's
/// `ElicitRequest`/`CreateMessageRequest` are the embedded `InputRequest` shapes.
macro_rules! table {
    ($( $folder:literal => $ty:ty $([$pat:pat])? ;)*) => {
        fn codec(folder: &str) -> Option<Codec> {
            match folder {
                $(
                    $folder => Some(|value| {
                        round_trip::<$ty>(value, |_decoded| true $(&& matches!(_decoded, $pat))?)
                    }),
                )*
                _ => None,
            }
        }

        const MAPPED_FOLDERS: &[&str] = &[$($folder),*];
    };
}

table! {
    "AudioContent" => ContentBlock [ContentBlock::Audio(_)];
    "BlobResourceContents" => BlobResourceContents;
    "BooleanSchema" => BooleanSchema;
    "CallToolRequest" => CallToolRequest;
    "CallToolRequestParams" => CallToolRequestParams;
    "CallToolResult" => CallToolResult;
    "CallToolResultResponse" => CallToolResultResponse;
    "CancelledNotification" => CancelledNotification;
    "CancelledNotificationParams" => CancelledNotificationParams;
    "ClientCapabilities" => ClientCapabilities;
    "CompleteRequest" => CompleteRequest;
    "CompleteRequestParams" => CompleteRequestParams;
    "CompleteResult" => CompleteResult;
    "CompleteResultResponse" => CompleteResultResponse;
    "CreateMessageRequest" => CreateMessageRequest;
    "CreateMessageRequestParams" => CreateMessageRequestParams;
    "CreateMessageResult" => CreateMessageResult;
    "DiscoverRequest" => DiscoverRequest;
    "DiscoverResult" => DiscoverResult;
    "DiscoverResultResponse" => DiscoverResultResponse;
    "ElicitRequest" => ElicitRequest;
    "ElicitRequestFormParams" => ElicitRequestFormParams;
    "ElicitRequestURLParams" => ElicitRequestURLParams;
    "ElicitResult" => ElicitResult;
    "EmbeddedResource" => ContentBlock [ContentBlock::Resource(_)];
    "GetPromptRequest" => GetPromptRequest;
    "GetPromptRequestParams" => GetPromptRequestParams;
    "GetPromptResult" => GetPromptResult;
    "GetPromptResultResponse" => GetPromptResultResponse;
    "HeaderMismatchError" => HeaderMismatchError;
    "ImageContent" => ContentBlock [ContentBlock::Image(_)];
    "InputRequests" => InputRequests;
    "InputRequiredResult" => InputRequiredResult;
    "InputResponses" => InputResponses;
    "InternalError" => InternalError;
    "InvalidParamsError" => InvalidParamsError;
    "ListPromptsRequest" => ListPromptsRequest;
    "ListPromptsResult" => ListPromptsResult;
    "ListPromptsResultResponse" => ListPromptsResultResponse;
    "ListResourceTemplatesRequest" => ListResourceTemplatesRequest;
    "ListResourceTemplatesResult" => ListResourceTemplatesResult;
    "ListResourceTemplatesResultResponse" => ListResourceTemplatesResultResponse;
    "ListResourcesRequest" => ListResourcesRequest;
    "ListResourcesResult" => ListResourcesResult;
    "ListResourcesResultResponse" => ListResourcesResultResponse;
    "ListRootsRequest" => ListRootsRequest;
    "ListRootsResult" => ListRootsResult;
    "ListToolsRequest" => ListToolsRequest;
    "ListToolsResult" => ListToolsResult;
    "ListToolsResultResponse" => ListToolsResultResponse;
    "LoggingMessageNotification" => LoggingMessageNotification;
    "LoggingMessageNotificationParams" => LoggingMessageNotificationParams;
    "MethodNotFoundError" => MethodNotFoundError;
    "MissingRequiredClientCapabilityError" => MissingRequiredClientCapabilityError;
    "ModelPreferences" => ModelPreferences;
    "NumberSchema" => NumberSchema;
    "PaginatedRequestParams" => PaginatedRequestParams;
    "ParseError" => ParseError;
    "ProgressNotification" => ProgressNotification;
    "ProgressNotificationParams" => ProgressNotificationParams;
    "PromptListChangedNotification" => PromptListChangedNotification;
    "ReadResourceRequest" => ReadResourceRequest;
    "ReadResourceResult" => ReadResourceResult;
    "ReadResourceResultResponse" => ReadResourceResultResponse;
    "Resource" => Resource;
    "ResourceLink" => ContentBlock [ContentBlock::ResourceLink(_)];
    "ResourceListChangedNotification" => ResourceListChangedNotification;
    "ResourceUpdatedNotification" => ResourceUpdatedNotification;
    "ResourceUpdatedNotificationParams" => ResourceUpdatedNotificationParams;
    "Root" => Root;
    "SamplingMessage" => SamplingMessage;
    "ServerCapabilities" => ServerCapabilities;
    "StringSchema" => StringSchema;
    "SubscriptionsAcknowledgedNotification" => SubscriptionsAcknowledgedNotification;
    "SubscriptionsListenRequest" => SubscriptionsListenRequest;
    "SubscriptionsListenResult" => SubscriptionsListenResult;
    "SubscriptionsListenResultResponse" => SubscriptionsListenResultResponse;
    "TextContent" => ContentBlock [ContentBlock::Text(_)];
    "TextResourceContents" => TextResourceContents;
    "TitledMultiSelectEnumSchema" => TitledMultiSelectEnumSchema;
    "TitledSingleSelectEnumSchema" => TitledSingleSelectEnumSchema;
    "Tool" => Tool;
    "ToolListChangedNotification" => ToolListChangedNotification;
    "ToolResultContent" => SamplingMessageContentBlock [SamplingMessageContentBlock::ToolResult(_)];
    "ToolUseContent" => SamplingMessageContentBlock [SamplingMessageContentBlock::ToolUse(_)];
    "UnsupportedProtocolVersionError" => UnsupportedProtocolVersionError;
    "UntitledMultiSelectEnumSchema" => UntitledMultiSelectEnumSchema;
    "UntitledSingleSelectEnumSchema" => UntitledSingleSelectEnumSchema;
}

fn spec_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/spec")
}

fn read_json(path: &Path) -> Value {
    let text = fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Validators for `{"$ref": "#/$defs/<Type>"}`, compiled from the whole schema document so that every
/// `$ref` resolves inside it; nothing is fetched (the crate is built without its HTTP and file
/// resolvers, and the 2020-12 meta-schema is bundled). Formats (`uri`, `uri-template`, ...) are
/// asserted, which 2020-12 leaves off by default, so the gate is stricter than the schema's minimum.
struct SchemaValidators {
    document: Value,
    compiled: BTreeMap<String, jsonschema::Validator>,
}

impl SchemaValidators {
    fn load() -> Self {
        SchemaValidators {
            document: read_json(&spec_dir().join("schema.json")),
            compiled: BTreeMap::new(),
        }
    }

    fn validate(&mut self, type_name: &str, instance: &Value) -> Result<(), String> {
        if !self.compiled.contains_key(type_name) {
            if self.document["$defs"].get(type_name).is_none() {
                return Err(format!("schema.json has no $defs/{type_name}"));
            }
            let mut root = self.document.clone();
            root["$ref"] = json!(format!("#/$defs/{type_name}"));
            let validator = jsonschema::options()
                .should_validate_formats(true)
                .build(&root)
                .map_err(|e| format!("schema for {type_name} does not compile: {e}"))?;
            self.compiled.insert(type_name.to_owned(), validator);
        }
        let errors: Vec<String> = self.compiled[type_name]
            .iter_errors(instance)
            .map(|e| format!("{} at {}", e, e.instance_path()))
            .collect();
        if errors.is_empty() {
            Ok(())
        } else {
            Err(format!("schema: {}", errors.join("; ")))
        }
    }
}

#[test]
fn every_official_example_round_trips_and_validates() {
    let examples = spec_dir().join("examples");
    let mut folders: Vec<PathBuf> = fs::read_dir(&examples)
        .unwrap_or_else(|e| panic!("{}: {e}", examples.display()))
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.is_dir())
        .collect();
    folders.sort();

    let mut validators = SchemaValidators::load();
    let mut checked = 0;
    let mut failures = Vec::new();
    for folder in &folders {
        let name = folder.file_name().unwrap().to_str().unwrap();
        let Some(codec) = codec(name) else {
            failures.push(format!("{name}: no type mapped to this example folder"));
            continue;
        };
        let mut files: Vec<PathBuf> = fs::read_dir(folder)
            .unwrap()
            .map(|entry| entry.unwrap().path())
            .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
            .collect();
        files.sort();
        for file in files {
            let label = format!("{name}/{}", file.file_name().unwrap().to_string_lossy());
            let original = read_json(&file);
            checked += 1;
            let encoded = match codec(&original) {
                Ok(encoded) => encoded,
                Err(e) => {
                    failures.push(format!("{label}: {e}"));
                    continue;
                }
            };
            if encoded != original {
                failures.push(format!(
                    "{label}: round trip changed the message\n  original: {original}\n  encoded:  {encoded}"
                ));
            }
            if let Err(e) = validators.validate(name, &encoded) {
                failures.push(format!("{label}: {e}"));
            }
        }
    }

    assert!(
        failures.is_empty(),
        "{} failure(s):\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert_eq!(checked, EXPECTED_FILES, "example files checked");
    println!("{checked}/{EXPECTED_FILES} official examples round-tripped and validated");
}

/// The table names no folder that does not exist, so it cannot rot silently.
#[test]
fn every_mapped_folder_exists() {
    let examples = spec_dir().join("examples");
    for folder in MAPPED_FOLDERS {
        assert!(
            examples.join(folder).is_dir(),
            "table maps missing folder {folder}"
        );
    }
}

/// The gate's validator really rejects: a missing required member fails the schema check.
#[test]
fn the_schema_check_can_fail() {
    let mut validators = SchemaValidators::load();
    assert!(
        validators
            .validate(
                "CallToolResult",
                &json!({"resultType": "complete", "content": []})
            )
            .is_ok()
    );
    assert!(
        validators
            .validate("CallToolResult", &json!({"resultType": "complete"}))
            .is_err()
    );
    assert!(
        validators
            .validate(
                "Tool",
                &json!({"name": "x", "inputSchema": {"type": "string"}})
            )
            .is_err()
    );
    assert!(validators.validate("NoSuchType", &json!({})).is_err());
    // Formats are asserted, not just annotated: `Icon.src` is a `uri`.
    assert!(
        validators
            .validate("Icon", &json!({"src": "https://example.com/i.png"}))
            .is_ok()
    );
    assert!(
        validators
            .validate("Icon", &json!({"src": "not a uri"}))
            .is_err()
    );
}
