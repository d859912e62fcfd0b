#!/usr/bin/env python3
"""What scripts/check-packages checks in the manifests and in the packaged .crate files.

    check_packages.py manifests METADATA.json RUSTC_VERSION
        Every published crate of the workspace (cargo metadata, with dependencies) has what
        crates.io shows and needs: description, licence, repository, readme, keywords, categories
        (crates.io's slugs), rust-version equal to the toolchain's; its dependencies on other
        workspace crates carry versions; it depends on no unpublished crate; no package in the
        dependency graph needs a newer Rust than our rust-version. Prints the published crates'
        names, one a line.

    check_packages.py contents LICENSE CRATE...
        Each .crate holds Cargo.toml with rust-version, README.md, the same LICENSE as the
        repository's and its src/, and nothing from tests/, benches/, fuzz/ or peers/; prints a
        table of sizes.
"""

import json
import re
import sys
import tarfile
import tomllib

# crates.io's category slugs (its src/boot/categories.toml); a crate naming another one is refused
# on publish.
CATEGORIES = {
    "algorithms", "api-bindings", "asynchronous", "authentication", "caching",
    "command-line-interface", "command-line-utilities", "compression", "computer-vision", "config",
    "concurrency", "cryptography", "cryptography::cryptocurrencies", "database",
    "database-implementations", "data-structures", "date-and-time", "development-tools",
    "development-tools::build-utils", "development-tools::cargo-plugins",
    "development-tools::debugging", "development-tools::ffi",
    "development-tools::procedural-macro-helpers", "development-tools::profiling",
    "development-tools::testing", "email", "embedded", "emulators", "encoding",
    "external-ffi-bindings", "filesystem", "game-engines", "game-development", "games", "graphics",
    "gui", "hardware-support", "internationalization", "localization", "mathematics",
    "memory-management", "multimedia", "multimedia::audio", "multimedia::video",
    "multimedia::images", "multimedia::encoding", "network-programming", "no-std", "os",
    "os::linux-apis", "os::macos-apis", "os::unix-apis", "os::windows-apis",
    "parser-implementations", "parsing", "rendering", "rendering::engine",
    "rendering::graphics-api", "rendering::data-formats", "rust-patterns", "science",
    "science::robotics", "simulation", "template-engine", "text-editors", "text-processing",
    "value-formatting", "visualization", "wasm", "web-programming", "web-programming::http-client",
    "web-programming::http-server", "web-programming::websocket",
}
KEYWORD = re.compile(r"[a-z][a-z0-9_+-]{0,19}")
LICENSE = "Apache-2.0"


def _version(text):
    return tuple(int(part) for part in text.split("."))


def _padded(text):
    """A version as three numbers: 1.95 is 1.95.0."""
    return (_version(text) + (0, 0, 0))[:3]


def _major_minor(text):
    return _version(text)[:2]


def check_manifests(metadata, rustc_version):
    """Problems found (strings), the published crates' names, and the dependency that needs the
    newest Rust (its name and version, its rust-version) or None."""
    problems = []
    members = set(metadata["workspace_members"])
    packages = {p["id"]: p for p in metadata["packages"]}
    ours = [packages[i] for i in members]
    unpublished = {p["name"] for p in ours if p.get("publish") == []}
    published = sorted((p for p in ours if p.get("publish") != []), key=lambda p: p["name"])
    toolchain = _major_minor(rustc_version)
    for p in published:
        name = p["name"]

        def need(cond, what):
            if not cond:
                problems.append(f"{name}: {what}")

        need(p.get("description"), "no description")
        need(p.get("license") == LICENSE, f"license is {p.get('license')!r}, not {LICENSE!r}")
        need(p.get("repository"), "no repository")
        need(p.get("readme"), "no readme")
        keywords = p.get("keywords") or []
        need(1 <= len(keywords) <= 5, f"{len(keywords)} keywords (crates.io takes 1 to 5)")
        for k in keywords:
            need(KEYWORD.fullmatch(k), f"keyword {k!r} is not a crates.io keyword")
        categories = p.get("categories") or []
        need(1 <= len(categories) <= 5, f"{len(categories)} categories (crates.io takes 1 to 5)")
        for c in categories:
            need(c in CATEGORIES, f"category {c!r} is not one of crates.io's")
        rv = p.get("rust_version")
        need(rv, "no rust-version")
        if rv:
            need(_major_minor(rv) == toolchain,
                 f"rust-version {rv} is not the toolchain's {rustc_version} (CI builds with the MSRV)")
        for dep in p["dependencies"]:
            if dep.get("path") is None:
                continue
            if dep.get("kind") == "dev":
                # Stripped from the package when it has no version; kept (and then needed) otherwise.
                continue
            need(dep["name"] not in unpublished, f"depends on the unpublished {dep['name']}")
            need(dep.get("req") not in (None, "*"),
                 f"its dependency on {dep['name']} has a path but no version")
    # The dependency graph (every platform's): nothing may need a newer Rust than the MSRV, which
    # is the toolchain's version.
    msrv = _padded(rustc_version)
    newest = None
    for p in metadata["packages"]:
        rv = p.get("rust_version")
        if not rv or p["id"] in members:
            continue
        if newest is None or _padded(rv) > _padded(newest[1]):
            newest = (f"{p['name']} {p['version']}", rv)
        if _padded(rv) > msrv:
            problems.append(f"{p['name']} {p['version']} needs Rust {rv}, newer than {rustc_version}")
    return problems, [p["name"] for p in published], newest


def check_contents(license_text, crate_paths):
    """Problems found and rows (name, .crate bytes, unpacked bytes, files) of each package."""
    problems = []
    rows = []
    banned = ("tests/", "benches/", "fuzz/", "peers/", "target/", "node_modules/")
    for path in crate_paths:
        with open(path, "rb") as f:
            size = len(f.read())
        with tarfile.open(path, "r:gz") as tar:
            members = [m for m in tar.getmembers() if m.isfile()]
            root = members[0].name.split("/")[0]
            files = {m.name[len(root) + 1:]: m for m in members}
            unpacked = sum(m.size for m in members)

            def need(cond, what):
                if not cond:
                    problems.append(f"{root}: {what}")

            need("Cargo.toml" in files, "no Cargo.toml")
            need("README.md" in files, "no README.md")
            need(any(f.startswith("src/") for f in files), "no src/")
            need("LICENSE" in files, "no LICENSE")
            if "LICENSE" in files:
                need(tar.extractfile(files["LICENSE"]).read() == license_text,
                     "LICENSE differs from the repository's")
            if "Cargo.toml" in files:
                manifest = tomllib.loads(tar.extractfile(files["Cargo.toml"]).read().decode())
                need(manifest["package"].get("rust-version"), "Cargo.toml has no rust-version")
            for f in files:
                need(not f.startswith(banned), f"carries {f}")
        rows.append((root, size, unpacked, len(files)))
    return problems, rows


def _kib(n):
    return f"{n / 1024:.1f} KiB"


def main(argv):
    if len(argv) == 3 and argv[0] == "manifests":
        with open(argv[1]) as f:
            metadata = json.load(f)
        problems, names, newest = check_manifests(metadata, argv[2])
        if newest:
            print(f"check-packages: the newest rust-version among dependencies: {newest[1]} ({newest[0]})",
                  file=sys.stderr)
        for p in problems:
            print(f"check-packages: {p}", file=sys.stderr)
        if problems:
            sys.exit(1)
        print("\n".join(names))
    elif len(argv) >= 3 and argv[0] == "contents":
        with open(argv[1], "rb") as f:
            license_text = f.read()
        problems, rows = check_contents(license_text, argv[2:])
        width = max(len(r[0]) for r in rows)
        print(f"{'package':<{width}}  {'.crate':>11}  {'unpacked':>11}  files")
        for name, size, unpacked, files in rows:
            print(f"{name:<{width}}  {_kib(size):>11}  {_kib(unpacked):>11}  {files:>5}")
        total = sum(r[1] for r in rows)
        print(f"{'total':<{width}}  {_kib(total):>11}")
        for p in problems:
            print(f"check-packages: {p}", file=sys.stderr)
        if problems:
            sys.exit(1)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
