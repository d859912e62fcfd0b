//! `kelson completions SHELL`: a completion script for each shell, naming the subcommands.

use crate::harness::mcp;

#[test]
fn each_shell_gets_a_script_that_names_the_subcommands() {
    for shell in ["bash", "zsh", "fish"] {
        let run = mcp(&["completions", shell], "");
        run.expect_code(0);
        let script = &run.stdout;
        assert!(script.len() > 1000, "{shell}: {script}");
        for word in ["serve", "tools", "call", "completions", "--wide", "--stdio"] {
            assert!(script.contains(word), "{shell}: no {word} in\n{script}");
        }
        assert_eq!(run.stderr, "", "{shell}");
    }
    // Each is the shell's own kind of script.
    assert!(
        mcp(&["completions", "bash"], "")
            .stdout
            .contains("complete -F")
    );
    assert!(
        mcp(&["completions", "zsh"], "")
            .stdout
            .starts_with("#compdef kelson")
    );
    assert!(
        mcp(&["completions", "fish"], "")
            .stdout
            .contains("complete -c kelson")
    );
    // An unknown shell is a usage error.
    let run = mcp(&["completions", "cmd.exe"], "");
    run.expect_code(4);
    assert!(run.stderr.contains("possible values"), "{}", run.stderr);
}
