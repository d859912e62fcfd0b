//! The authorization settings, from `[auth]` and the flags, and the scopes its metadata lists.

use super::*;

#[test]
fn auth_comes_from_the_file_and_the_flags() {
    assert!(resolve_with(&[], None).unwrap().auth.is_none());
    let toml = "[auth]\nissuer = \"https://as.example\"\nresource = \"https://mcp.example/mcp\"\n\
                required_scopes = [\"mcp:tools\"]\nclaims = [\"email\"]\nleeway = \"5s\"\n\
                resource_name = \"Shop\"\nresource_documentation = \"https://docs.example/mcp\"\n";
    let auth = resolve_with(&["--auth-required-scope", "mcp:admin"], Some(toml))
        .unwrap()
        .auth
        .unwrap()
        .config;
    assert_eq!(auth.resource_name.as_deref(), Some("Shop"));
    assert_eq!(
        auth.resource_documentation.as_deref(),
        Some("https://docs.example/mcp")
    );
    // The flags win over the file.
    let auth = resolve_with(
        &[
            "--auth-resource-name",
            "Sales",
            "--auth-resource-documentation",
            "https://docs.example/sales",
        ],
        Some(toml),
    )
    .unwrap()
    .auth
    .unwrap()
    .config;
    assert_eq!(auth.resource_name.as_deref(), Some("Sales"));
    assert_eq!(
        auth.resource_documentation.as_deref(),
        Some("https://docs.example/sales")
    );
    let auth = resolve_with(&["--auth-required-scope", "mcp:admin"], Some(toml))
        .unwrap()
        .auth
        .unwrap()
        .config;
    assert_eq!(auth.issuer, "https://as.example");
    assert_eq!(auth.resource, "https://mcp.example/mcp");
    assert_eq!(auth.required_scopes, ["mcp:tools", "mcp:admin"]);
    assert_eq!(auth.claims, ["email"]);
    assert_eq!(auth.leeway, Duration::from_secs(5));
    assert!(auth.introspection.is_none());

    // The flags alone, with the introspection secret from the environment.
    let env = |name: &str| match name {
        "KELSON_AUTH_CLIENT_SECRET" => Some(OsString::from("s3cret")),
        other => env(other),
    };
    let argv = [
        "--auth-issuer",
        "http://127.0.0.1:9000",
        "--auth-resource",
        "http://127.0.0.1:8080/mcp",
        "--auth-client-id",
        "rs",
    ];
    let auth = resolve(&args(&argv), None, &env)
        .unwrap()
        .auth
        .unwrap()
        .config;
    let introspection = auth.introspection.unwrap();
    assert_eq!(introspection.client_id, "rs");
    assert_eq!(introspection.client_secret, "s3cret");
    assert!(!format!("{introspection:?}").contains("s3cret"));
}

#[test]
fn auth_refuses_incomplete_or_malformed_settings() {
    let err = |argv: &[&str], toml: Option<&str>| resolve_with(argv, toml).unwrap_err();
    assert!(
        err(&["--auth-issuer", "https://as.example"], None).starts_with("auth.resource: "),
        "a resource is required"
    );
    assert!(
        err(&["--auth-resource", "https://mcp.example/mcp"], None).starts_with("auth.issuer: ")
    );
    assert!(
        err(
            &[],
            Some("[auth]\nissuer = \"as.example\"\nresource = \"https://m/mcp\"\n")
        )
        .starts_with("auth.issuer: ")
    );
    assert!(
        err(
            &[],
            Some("[auth]\nissuer = \"https://as\"\nresource = \"https://m/mcp\"\nrequired_scopes = [\"a b\"]\n")
        )
        .starts_with("auth.required_scopes[0]: ")
    );
    assert!(
        err(
            &[],
            Some("[auth]\nissuer = \"https://as\"\nresource = \"https://m/mcp\"\nresource_documentation = \"docs\"\n")
        )
        .starts_with("auth.resource_documentation: ")
    );
    // Introspection without a secret anywhere.
    assert!(
        err(
            &[
                "--auth-issuer",
                "https://as",
                "--auth-resource",
                "https://m/mcp",
                "--auth-client-id",
                "rs"
            ],
            None
        )
        .starts_with("--auth-client-id: introspection needs the client's secret")
    );
    // There is no flag for the secret itself.
    let cli = Cli::try_parse_from(["serve", "--auth-client-secret", "x"]);
    assert!(cli.is_err());
}

#[test]
fn the_metadata_lists_every_scope_served_unless_set() {
    let toml = "[auth]\nissuer = \"https://as.example\"\nresource = \"https://mcp.example/mcp\"\n\
                required_scopes = [\"mcp:tools\"]\n";
    let auth = resolve_with(
        &["--db", "pg=postgres://r@127.0.0.1/test", "--root", "/srv"],
        Some(toml),
    )
    .unwrap()
    .auth
    .unwrap()
    .config;
    assert_eq!(
        auth.scopes_supported,
        ["mcp:tools", "pg:read", "pg:write", "files:read"]
    );
    let set = format!("{toml}scopes_supported = [\"only\"]\n");
    let auth = resolve_with(&[], Some(&set)).unwrap().auth.unwrap().config;
    assert_eq!(auth.scopes_supported, ["only"]);
}
