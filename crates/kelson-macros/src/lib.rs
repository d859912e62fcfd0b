//! Attribute macros that turn async functions into MCP registrations for `kelson-server`.
//!
//! Each macro generates exactly what the function API would: a sibling function returning a
//! `kelson_server::Route` (`NAME_tool()`, `NAME_prompt()`, `NAME_resource()`) that passes a
//! `ToolDef` or `PromptDef` and a closure to `Route::tool` and friends. Nothing here can do what
//! the function API cannot.
//!
//! - `#[tool]` on an `async fn`: the tool's name is the function's, its description the doc
//!   comment. Parameters whose types are extractors (`RequestContext`, `State<S>`, `Principal`,
//!   `Uri`, or any parameter marked `#[extract]`) are extracted; every other parameter becomes a
//!   property of a generated arguments struct (its doc comment the property's description, its
//!   `#[serde(...)]` and `#[schemars(...)]` attributes kept, `#[header("Name")]` the
//!   `x-mcp-header` declaration). A parameter marked `#[args]` is the whole arguments type.
//!   Options: `name = "..."`, `title = "..."`, `description = "..."`, `read_only`, `destructive`,
//!   `idempotent`, `open_world` (each also `= false`), `scopes("a", "b")`.
//! - `#[prompt]`: the same for prompts (options `name`, `title`, `description`, `scopes`).
//! - `#[resource("uri")]`: a fixed resource, or a template when the URI has `{variables}`, which
//!   the parameters then hold. Options `name`, `title`, `description`, `mime_type`, `scopes`.
//! - `#[tools]` on an `impl` block: every method marked `#[tool]`, `#[prompt]` or `#[resource]`
//!   is registered by an implementation of `kelson_server::Toolbox`; `&self` methods read the value
//!   given to `ServerBuilder::toolbox` as their state.
//!
//! The generated code names the runtime as `::kelson_server`, or `::kelson::server` when the crate
//! depends on the `kelson` facade instead; `crate = "path"` overrides it.

use proc_macro::TokenStream;
use proc_macro2::{Span, TokenStream as Tokens};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{
    Attribute, Expr, FnArg, Ident, ImplItem, ItemFn, ItemImpl, LitBool, LitStr, Pat, Path,
    Signature, Type, Visibility,
};

/// Registers an async function as a tool; see the crate documentation.
#[proc_macro_attribute]
pub fn tool(attr: TokenStream, item: TokenStream) -> TokenStream {
    free_fn(Kind::Tool, attr, item)
}

/// Registers an async function as a prompt; see the crate documentation.
#[proc_macro_attribute]
pub fn prompt(attr: TokenStream, item: TokenStream) -> TokenStream {
    free_fn(Kind::Prompt, attr, item)
}

/// Registers an async function as a resource or resource template; see the crate documentation.
#[proc_macro_attribute]
pub fn resource(attr: TokenStream, item: TokenStream) -> TokenStream {
    free_fn(Kind::Resource, attr, item)
}

/// Registers the `#[tool]`, `#[prompt]` and `#[resource]` methods of an `impl` block as a
/// `Toolbox`; see the crate documentation.
#[proc_macro_attribute]
pub fn tools(attr: TokenStream, item: TokenStream) -> TokenStream {
    match tools_impl(attr.into(), item.into()) {
        Ok(tokens) => tokens.into(),
        Err(e) => e.to_compile_error().into(),
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Tool,
    Prompt,
    Resource,
}

impl Kind {
    fn attr_name(self) -> &'static str {
        match self {
            Kind::Tool => "tool",
            Kind::Prompt => "prompt",
            Kind::Resource => "resource",
        }
    }

    fn from_attr(attr: &Attribute) -> Option<Kind> {
        let ident = attr.path().get_ident()?;
        match ident.to_string().as_str() {
            "tool" => Some(Kind::Tool),
            "prompt" => Some(Kind::Prompt),
            "resource" => Some(Kind::Resource),
            _ => None,
        }
    }
}

/// What the attribute says.
#[derive(Default)]
struct Options {
    name: Option<LitStr>,
    title: Option<LitStr>,
    description: Option<LitStr>,
    mime_type: Option<LitStr>,
    uri: Option<LitStr>,
    scopes: Vec<LitStr>,
    hints: Vec<(&'static str, bool, Span)>,
    krate: Option<Path>,
}

fn parse_options(kind: Kind, attr: Tokens) -> syn::Result<Options> {
    let mut options = Options::default();
    let parser = syn::meta::parser(|meta| {
        let key = meta
            .path
            .get_ident()
            .map(ToString::to_string)
            .unwrap_or_default();
        let flag = |meta: &syn::meta::ParseNestedMeta<'_>| -> syn::Result<bool> {
            if meta.input.peek(syn::Token![=]) {
                Ok(meta.value()?.parse::<LitBool>()?.value)
            } else {
                Ok(true)
            }
        };
        match key.as_str() {
            "name" => options.name = Some(meta.value()?.parse()?),
            "title" => options.title = Some(meta.value()?.parse()?),
            "description" => options.description = Some(meta.value()?.parse()?),
            "crate" => {
                let path: LitStr = meta.value()?.parse()?;
                options.krate = Some(path.parse()?);
            }
            "scopes" => return Err(meta.error("write scopes(\"a\", \"b\")")),
            "mime_type" if kind == Kind::Resource => {
                options.mime_type = Some(meta.value()?.parse()?);
            }
            "read_only" | "destructive" | "idempotent" | "open_world" if kind == Kind::Tool => {
                let name = match key.as_str() {
                    "read_only" => "read_only",
                    "destructive" => "destructive",
                    "idempotent" => "idempotent",
                    _ => "open_world",
                };
                options.hints.push((name, flag(&meta)?, meta.path.span()));
            }
            _ => {
                let known = match kind {
                    Kind::Tool => {
                        "name, title, description, read_only, destructive, idempotent, open_world, scopes(..), crate"
                    }
                    Kind::Prompt => "name, title, description, scopes(..), crate",
                    Kind::Resource => {
                        "\"uri\", name, title, description, mime_type, scopes(..), crate"
                    }
                };
                return Err(meta.error(format!(
                    "unknown #[{}] option `{key}`; the options are: {known}",
                    kind.attr_name()
                )));
            }
        }
        Ok(())
    });
    // `scopes(...)` holds string literals, which `syn::meta` does not parse; take it apart first.
    let attr = take_scopes(attr, &mut options.scopes)?;
    let attr = if kind == Kind::Resource {
        take_uri(attr, &mut options.uri)?
    } else {
        attr
    };
    syn::parse::Parser::parse2(parser, attr)?;
    Ok(options)
}

/// Removes `scopes("a", "b")` from the attribute tokens, collecting the literals.
fn take_scopes(attr: Tokens, scopes: &mut Vec<LitStr>) -> syn::Result<Tokens> {
    use proc_macro2::TokenTree;
    let tokens: Vec<TokenTree> = attr.into_iter().collect();
    let mut kept = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        if let (TokenTree::Ident(ident), Some(TokenTree::Group(group))) =
            (&tokens[i], tokens.get(i + 1))
            && ident == "scopes"
            && group.delimiter() == proc_macro2::Delimiter::Parenthesis
        {
            let list = syn::parse::Parser::parse2(
                syn::punctuated::Punctuated::<LitStr, syn::Token![,]>::parse_terminated,
                group.stream(),
            )?;
            scopes.extend(list);
            i += 2;
            // Drop the comma that followed.
            if let Some(TokenTree::Punct(p)) = tokens.get(i)
                && p.as_char() == ','
            {
                i += 1;
            }
            continue;
        }
        kept.push(tokens[i].clone());
        i += 1;
    }
    Ok(kept.into_iter().collect())
}

/// Removes the leading URI literal of `#[resource("uri", ...)]`.
fn take_uri(attr: Tokens, uri: &mut Option<LitStr>) -> syn::Result<Tokens> {
    use proc_macro2::TokenTree;
    let mut tokens = attr.clone().into_iter().peekable();
    if let Some(TokenTree::Literal(lit)) = tokens.peek() {
        let lit: LitStr = syn::parse2(TokenTree::Literal(lit.clone()).into())?;
        *uri = Some(lit);
        tokens.next();
        if let Some(TokenTree::Punct(p)) = tokens.peek()
            && p.as_char() == ','
        {
            tokens.next();
        }
        return Ok(tokens.collect());
    }
    Err(syn::Error::new(
        attr.span(),
        "#[resource] needs the URI first: #[resource(\"docs://readme\")] or a template such as #[resource(\"db://{table}/{id}\")]",
    ))
}

/// The runtime crate's path: `crate = ".."`, else `::kelson_server` when the manifest depends on
/// kelson-server, else `::NAME::server` when it depends on the `kelson` facade (under whatever name the
/// manifest gives it), else `::kelson_server`.
fn runtime_path(krate: Option<&Path>) -> Tokens {
    if let Some(path) = krate {
        return quote!(#path);
    }
    let manifest = std::env::var("CARGO_MANIFEST_DIR")
        .ok()
        .and_then(|dir| std::fs::read_to_string(std::path::Path::new(&dir).join("Cargo.toml")).ok())
        .unwrap_or_default();
    let path = match runtime_crate(&manifest) {
        Runtime::Server(name) => format!("::{name}"),
        Runtime::Facade(name) => format!("::{name}::server"),
    };
    path.parse().expect("a crate path")
}

/// Where the runtime is, by the name the manifest gives its crate (as Rust spells it).
#[derive(Debug, PartialEq, Eq)]
enum Runtime {
    /// kelson-server itself.
    Server(String),
    /// The `kelson` facade, whose `server` module is kelson-server.
    Facade(String),
}

/// Reads the dependencies of a `Cargo.toml` well enough to find kelson-server or the facade: the
/// inline forms (`kelson = "0.1"`, `kelson = { version = .., package = .. }`, `kelson.workspace = true`)
/// and the table form (`[dependencies.kelson]`, with an optional `package = ..`), in `[dependencies]`,
/// `[dev-dependencies]`, `[build-dependencies]` and their `[target.'..'.*]` variants.
fn runtime_crate(manifest: &str) -> Runtime {
    // (name in the manifest, package it names)
    let mut deps: Vec<(String, String)> = Vec::new();
    let mut in_deps = false;
    let mut table: Option<usize> = None;
    let package_of = |text: &str| {
        let at = text.find("package")?;
        let rest = text[at + "package".len()..]
            .trim_start()
            .strip_prefix('=')?;
        let rest = rest.trim_start().strip_prefix('"')?;
        Some(rest[..rest.find('"')?].to_owned())
    };
    for line in manifest.lines() {
        let line = line.trim();
        if let Some(header) = line.strip_prefix('[') {
            let header = header.trim_end_matches(']').trim();
            let is_deps = |section: &str| section.ends_with("dependencies");
            table = None;
            in_deps = is_deps(header);
            if let Some((section, name)) = header.rsplit_once('.')
                && is_deps(section)
            {
                let name = name.trim_matches(['"', '\'']).to_owned();
                deps.push((name.clone(), name));
                table = Some(deps.len() - 1);
            }
            continue;
        }
        if let Some(index) = table {
            if let Some(package) = line.strip_prefix("package").and_then(|_| package_of(line)) {
                deps[index].1 = package;
            }
            continue;
        }
        if !in_deps {
            continue;
        }
        let name_end = line
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_'))
            .unwrap_or(line.len());
        let (name, rest) = line.split_at(name_end);
        if name.is_empty() || !rest.trim_start().starts_with(['=', '.']) {
            continue;
        }
        let package = package_of(rest).unwrap_or_else(|| name.to_owned());
        deps.push((name.to_owned(), package));
    }
    let find = |package: &str| {
        deps.iter()
            .find(|(_, p)| p == package)
            .map(|(name, _)| name.replace('-', "_"))
    };
    if let Some(name) = find("kelson-server") {
        Runtime::Server(name)
    } else if let Some(name) = find("kelson") {
        Runtime::Facade(name)
    } else if manifest
        .lines()
        .any(|line| line.trim() == "name = \"kelson\"")
    {
        // The facade's own tests and examples.
        Runtime::Facade("kelson".to_owned())
    } else {
        Runtime::Server("kelson_server".to_owned())
    }
}

fn doc_text(attrs: &[Attribute]) -> Option<String> {
    let lines: Vec<String> = attrs
        .iter()
        .filter(|a| a.path().is_ident("doc"))
        .filter_map(|a| match &a.meta {
            syn::Meta::NameValue(nv) => match &nv.value {
                Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(s),
                    ..
                }) => Some(s.value()),
                _ => None,
            },
            _ => None,
        })
        .map(|line| line.strip_prefix(' ').unwrap_or(&line).to_owned())
        .collect();
    let text = lines.join("\n").trim().to_owned();
    (!text.is_empty()).then_some(text)
}

/// How a parameter is passed.
enum Param {
    /// Extracted as it is: `RequestContext`, `State<_>`, `Principal`, `Uri`, `#[extract]`.
    Extract { ty: Box<Type> },
    /// The whole arguments type (`#[args]`).
    Args { ty: Box<Type> },
    /// A property of the generated arguments struct.
    Field {
        ident: Ident,
        ty: Box<Type>,
        attrs: Vec<Attribute>,
        header: Option<LitStr>,
    },
    /// `&self`: the toolbox, as `State<Self>`.
    Receiver,
}

const EXTRACTORS: &[&str] = &["RequestContext", "State", "Principal", "Uri", "CallParts"];

fn is_extractor_type(ty: &Type) -> bool {
    match ty {
        Type::Path(p) => p
            .path
            .segments
            .last()
            .is_some_and(|s| EXTRACTORS.contains(&s.ident.to_string().as_str())),
        _ => false,
    }
}

/// Splits the signature's parameters, stripping the attributes this macro reads.
fn params(kind: Kind, sig: &mut Signature) -> syn::Result<Vec<Param>> {
    let mut out = Vec::new();
    let mut contexts = 0;
    let mut args = 0;
    for input in &mut sig.inputs {
        match input {
            FnArg::Receiver(r) => {
                if r.reference.is_none() || r.mutability.is_some() {
                    return Err(syn::Error::new(
                        r.span(),
                        "a toolbox method takes `&self` (the state is shared by every call)",
                    ));
                }
                out.push(Param::Receiver);
            }
            FnArg::Typed(typed) => {
                let mut extract = false;
                let mut whole = false;
                let mut header = None;
                let mut kept = Vec::new();
                for attr in typed.attrs.drain(..) {
                    if attr.path().is_ident("extract") {
                        extract = true;
                    } else if attr.path().is_ident("args") {
                        whole = true;
                    } else if attr.path().is_ident("header") {
                        if kind != Kind::Tool {
                            return Err(syn::Error::new(
                                attr.span(),
                                "#[header] declares an x-mcp-header, which only tools have",
                            ));
                        }
                        header = Some(attr.parse_args::<LitStr>()?);
                    } else {
                        kept.push(attr);
                    }
                }
                let ty = typed.ty.clone();
                if is_context(&ty) {
                    contexts += 1;
                    if contexts > 1 {
                        return Err(syn::Error::new(
                            ty.span(),
                            "a handler takes at most one RequestContext",
                        ));
                    }
                }
                if extract || is_extractor_type(&ty) {
                    if let Some(attr) = kept.first() {
                        return Err(syn::Error::new(
                            attr.span(),
                            "an extracted parameter takes no attributes",
                        ));
                    }
                    out.push(Param::Extract { ty });
                } else if whole {
                    args += 1;
                    out.push(Param::Args { ty });
                } else {
                    let Pat::Ident(pat) = &*typed.pat else {
                        return Err(syn::Error::new(
                            typed.pat.span(),
                            "an argument parameter needs a plain name (it becomes the property's name); \
                             mark a destructured arguments type with #[args]",
                        ));
                    };
                    out.push(Param::Field {
                        ident: pat.ident.clone(),
                        ty,
                        attrs: kept,
                        header,
                    });
                }
            }
        }
    }
    let fields = out
        .iter()
        .filter(|p| matches!(p, Param::Field { .. }))
        .count();
    if args > 1 || (args == 1 && fields > 0) {
        return Err(syn::Error::new(
            sig.inputs.span(),
            "a handler takes its arguments either as one #[args] parameter or as plain parameters, not both",
        ));
    }
    Ok(out)
}

fn is_context(ty: &Type) -> bool {
    matches!(ty, Type::Path(p) if p.path.segments.last().is_some_and(|s| s.ident == "RequestContext"))
}

/// One registration: the `Route` expression, and the items it needs (the arguments struct).
struct Generated {
    items: Tokens,
    route: Tokens,
    name: String,
}

fn generate(
    kind: Kind,
    options: &Options,
    sig: &mut Signature,
    attrs: &[Attribute],
    rt: &Tokens,
    owner: Option<&Type>,
) -> syn::Result<Generated> {
    if sig.asyncness.is_none() {
        return Err(syn::Error::new(
            sig.fn_token.span(),
            format!(
                "#[{}] needs an `async fn` (the handler is awaited)",
                kind.attr_name()
            ),
        ));
    }
    if !sig.generics.params.is_empty() {
        return Err(syn::Error::new(
            sig.generics.span(),
            format!("#[{}] handlers cannot be generic", kind.attr_name()),
        ));
    }
    let params = params(kind, sig)?;
    let fn_name = &sig.ident;
    let name = options
        .name
        .as_ref()
        .map(LitStr::value)
        .unwrap_or_else(|| fn_name.to_string().trim_start_matches("r#").to_owned());
    let description = options
        .description
        .as_ref()
        .map(LitStr::value)
        .or_else(|| doc_text(attrs));

    let args_struct = format_ident!("__{}Arguments", camel(&fn_name.to_string()));
    let mut closure_params = Vec::new();
    let mut call_args = Vec::new();
    let mut fields = Vec::new();
    let mut headers = Vec::new();
    let has_fields = params.iter().any(|p| matches!(p, Param::Field { .. }));
    if has_fields {
        closure_params.push(quote!(__arguments: #args_struct));
    }
    for (i, param) in params.iter().enumerate() {
        let local = format_ident!("__p{i}");
        match param {
            Param::Receiver => {
                closure_params.push(quote!(#local: #rt::State<Self>));
            }
            Param::Extract { ty, .. } | Param::Args { ty, .. } => {
                closure_params.push(quote!(#local: #ty));
                call_args.push(quote!(#local));
            }
            Param::Field {
                ident,
                ty,
                attrs,
                header,
            } => {
                fields.push(quote!(#(#attrs)* #ident: #ty));
                call_args.push(quote!(__arguments.#ident));
                if let Some(header) = header {
                    let property = ident.to_string();
                    headers.push(quote!(.header(#property, #header)));
                }
            }
        }
    }
    let receiver = params.iter().position(|p| matches!(p, Param::Receiver));
    let call = match (owner, receiver) {
        (Some(_), Some(i)) => {
            let local = format_ident!("__p{i}");
            quote!(#local.#fn_name(#(#call_args),*).await)
        }
        (Some(_), None) => quote!(Self::#fn_name(#(#call_args),*).await),
        (None, _) => quote!(#fn_name(#(#call_args),*).await),
    };
    let items = if has_fields {
        let serde_path = quote!(#rt::__private::serde).to_string().replace(' ', "");
        let schemars_path = quote!(#rt::__private::schemars)
            .to_string()
            .replace(' ', "");
        let doc = description.clone().unwrap_or_default();
        quote! {
            #[doc = #doc]
            #[allow(non_camel_case_types, dead_code)]
            #[derive(#rt::__private::serde::Deserialize, #rt::__private::schemars::JsonSchema)]
            #[serde(crate = #serde_path)]
            #[schemars(crate = #schemars_path)]
            struct #args_struct {
                #(#fields,)*
            }
        }
    } else {
        Tokens::new()
    };
    let scopes = &options.scopes;
    let scopes = if scopes.is_empty() {
        Tokens::new()
    } else {
        quote!(.scopes([#(#scopes),*]))
    };
    let title = options.title.as_ref().map(|t| quote!(.title(#t)));
    let description_call = description.as_ref().map(|d| quote!(.description(#d)));
    let closure = quote!(|#(#closure_params),*| async move { #call });
    // The return type is checked on its own first, so that a wrong one is reported at the type,
    // with the list of what would do, rather than as a closure that cannot serve.
    let output: Type = match &sig.output {
        syn::ReturnType::Default => syn::parse_quote!(()),
        syn::ReturnType::Type(_, ty) => (**ty).clone(),
    };
    let check = match kind {
        Kind::Tool => {
            quote_spanned!(output.span()=> let _ = <#output as #rt::IntoToolResult>::output_schema;)
        }
        Kind::Prompt => {
            quote_spanned!(output.span()=> let _ = <#output as #rt::IntoPromptResult>::into_prompt_result;)
        }
        Kind::Resource => {
            quote_spanned!(output.span()=> let _ = <#output as #rt::IntoReadResult>::into_contents;)
        }
    };
    let route = match kind {
        Kind::Tool => {
            let hints = options.hints.iter().map(|(hint, value, span)| {
                let method = Ident::new(hint, *span);
                quote!(.#method(#value))
            });
            quote! {
                #rt::Route::tool(
                    #rt::ToolDef::new(#name) #title #description_call #(#hints)* #(#headers)* #scopes,
                    #closure,
                )
            }
        }
        Kind::Prompt => quote! {
            #rt::Route::prompt(
                #rt::PromptDef::new(#name) #title #description_call #scopes,
                #closure,
            )
        },
        Kind::Resource => {
            let uri = options.uri.as_ref().expect("parse_options requires it");
            let is_template = uri.value().contains('{');
            let ty = if is_template {
                quote!(ResourceTemplate)
            } else {
                quote!(Resource)
            };
            let title = options.title.as_ref().map(|t| quote!(.with_title(#t)));
            let description = description.as_ref().map(|d| quote!(.with_description(#d)));
            let mime = options
                .mime_type
                .as_ref()
                .map(|m| quote!(.with_mime_type(#m)));
            let def = quote!(#rt::__private::kelson_types::#ty::new(#uri, #name) #title #description #mime);
            let def = if options.scopes.is_empty() {
                def
            } else {
                let scopes = &options.scopes;
                quote!(#rt::Scoped::new(#def, [#(#scopes),*]))
            };
            if is_template {
                quote!(#rt::Route::resource_template(#def, #closure))
            } else {
                quote!(#rt::Route::resource(#def, #closure))
            }
        }
    };
    let items = quote!(#items #check);
    Ok(Generated { items, route, name })
}

fn camel(snake: &str) -> String {
    snake
        .trim_start_matches("r#")
        .split('_')
        .map(|part| {
            let mut chars = part.chars();
            match chars.next() {
                Some(first) => first.to_uppercase().chain(chars).collect(),
                None => String::new(),
            }
        })
        .collect()
}

fn free_fn(kind: Kind, attr: TokenStream, item: TokenStream) -> TokenStream {
    let result = (|| -> syn::Result<Tokens> {
        let options = parse_options(kind, attr.into())?;
        let mut func: ItemFn = syn::parse(item).map_err(|e| {
            syn::Error::new(
                e.span(),
                format!("#[{}] goes on an `async fn`", kind.attr_name()),
            )
        })?;
        if let Some(receiver) = func.sig.receiver() {
            return Err(syn::Error::new(
                receiver.span(),
                format!(
                    "a method with #[{}] needs #[tools] on its impl block",
                    kind.attr_name()
                ),
            ));
        }
        let rt = runtime_path(options.krate.as_ref());
        let generated = generate(kind, &options, &mut func.sig, &func.attrs, &rt, None)?;
        let vis: &Visibility = &func.vis;
        let fn_name = &func.sig.ident;
        let maker = format_ident!("{}_{}", fn_name, kind.attr_name());
        let items = &generated.items;
        let route = &generated.route;
        let doc = format!(
            "The registration of [`{fn_name}`] as the {} `{}` (generated by `#[{}]`).",
            kind.attr_name(),
            generated.name,
            kind.attr_name()
        );
        Ok(quote! {
            #func

            #[doc = #doc]
            #vis fn #maker() -> #rt::Route {
                #items
                #route
            }
        })
    })();
    match result {
        Ok(tokens) => tokens.into(),
        Err(e) => e.to_compile_error().into(),
    }
}

fn tools_impl(attr: Tokens, item: Tokens) -> syn::Result<Tokens> {
    let mut krate: Option<Path> = None;
    let parser = syn::meta::parser(|meta| {
        if meta.path.is_ident("crate") {
            let path: LitStr = meta.value()?.parse()?;
            krate = Some(path.parse()?);
            Ok(())
        } else {
            Err(meta.error("#[tools] takes only `crate = \"path\"`"))
        }
    });
    syn::parse::Parser::parse2(parser, attr)?;
    let mut block: ItemImpl = syn::parse2(item)?;
    if block.trait_.is_some() {
        return Err(syn::Error::new(
            block.span(),
            "#[tools] goes on an inherent impl block",
        ));
    }
    let rt = runtime_path(krate.as_ref());
    let self_ty = block.self_ty.clone();
    let mut routes = Vec::new();
    let mut names: Vec<(Kind, String, Span)> = Vec::new();
    for item in &mut block.items {
        let ImplItem::Fn(method) = item else { continue };
        let Some(position) = method
            .attrs
            .iter()
            .position(|a| Kind::from_attr(a).is_some())
        else {
            continue;
        };
        let attr = method.attrs.remove(position);
        let kind = Kind::from_attr(&attr).expect("found above");
        let tokens = match &attr.meta {
            syn::Meta::Path(_) => Tokens::new(),
            syn::Meta::List(list) => list.tokens.clone(),
            syn::Meta::NameValue(nv) => {
                return Err(syn::Error::new(
                    nv.span(),
                    "write #[tool(...)], not #[tool = ...]",
                ));
            }
        };
        let mut options = parse_options(kind, tokens)?;
        if options.krate.is_none() {
            options.krate.clone_from(&krate);
        }
        let generated = generate(
            kind,
            &options,
            &mut method.sig,
            &method.attrs,
            &rt,
            Some(&self_ty),
        )?;
        if let Some((_, _, first)) = names
            .iter()
            .find(|(k, n, _)| *k == kind && *n == generated.name)
        {
            let mut err = syn::Error::new(
                method.sig.ident.span(),
                format!(
                    "the {} name `{}` is used twice in this block",
                    kind.attr_name(),
                    generated.name
                ),
            );
            err.combine(syn::Error::new(*first, "first used here"));
            return Err(err);
        }
        names.push((kind, generated.name.clone(), method.sig.ident.span()));
        let items = generated.items;
        let route = generated.route;
        routes.push(quote_spanned! {method.sig.ident.span()=> {
            #items
            #route
        }});
    }
    let (impl_generics, _, where_clause) = block.generics.split_for_impl();
    Ok(quote! {
        #block

        impl #impl_generics #rt::Toolbox for #self_ty #where_clause {
            fn routes() -> ::std::vec::Vec<#rt::Route> {
                ::std::vec![#(#routes),*]
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::{Runtime, runtime_crate};

    fn runtime(manifest: &str) -> Runtime {
        runtime_crate(manifest)
    }

    #[test]
    fn the_runtime_is_found_under_every_form_of_dependency() {
        let facade = |name: &str| Runtime::Facade(name.to_owned());
        let server = |name: &str| Runtime::Server(name.to_owned());
        assert_eq!(
            runtime("[dependencies]\nkelson = \"0.1\"\n"),
            facade("kelson")
        );
        assert_eq!(
            runtime("[dependencies]\nkelson.workspace = true\n"),
            facade("kelson")
        );
        assert_eq!(
            runtime("[dependencies]\nkelson = { version = \"0.1\", features = [\"auth\"] }\n"),
            facade("kelson")
        );
        assert_eq!(
            runtime("[dependencies.kelson]\nversion = \"0.1\"\nfeatures = [\"client\"]\n"),
            facade("kelson")
        );
        assert_eq!(
            runtime("[dependencies]\nprotocol = { package = \"kelson\", version = \"0.1\" }\n"),
            facade("protocol")
        );
        assert_eq!(
            runtime("[dependencies.my-kelson]\npackage = \"kelson\"\nversion = \"0.1\"\n"),
            facade("my_kelson")
        );
        assert_eq!(
            runtime("[target.'cfg(unix)'.dependencies]\nkelson = \"0.1\"\n"),
            facade("kelson")
        );
        // kelson-server named directly wins, whatever else is there.
        assert_eq!(
            runtime("[dependencies]\nkelson = \"0.1\"\nkelson-server = \"0.1\"\n"),
            server("kelson_server")
        );
        // A package section's fields and other sections are not dependencies.
        assert_eq!(
            runtime("[package]\nname = \"app\"\n[features]\nkelson = []\n"),
            server("kelson_server")
        );
        assert_eq!(runtime("[package]\nname = \"kelson\"\n"), facade("kelson"));
        // `kelson-types` is not `kelson`.
        assert_eq!(
            runtime("[dependencies]\nkelson-types = \"0.1\"\n"),
            server("kelson_server")
        );
    }
}
