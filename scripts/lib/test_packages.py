"""Fast tests of scripts/check-packages' own logic (the local registry's index, the manifest and
package checks), on manifests and .crate files made here:
`python3 -m unittest discover -s scripts/lib -p 'test_*.py'`."""
import io
import json
import os
import sys
import tarfile
import tempfile
import tomllib
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_packages as cp  # noqa: E402
import local_registry as lr  # noqa: E402


def make_crate(folder, name, version, manifest, files=None):
    """A .crate file (a gzipped tar of NAME-VERSION/...) holding MANIFEST and FILES."""
    path = os.path.join(folder, f"{name}-{version}.crate")
    with tarfile.open(path, "w:gz") as tar:
        for member, data in {"Cargo.toml": manifest, **(files or {})}.items():
            raw = data if isinstance(data, bytes) else data.encode()
            info = tarfile.TarInfo(f"{name}-{version}/{member}")
            info.size = len(raw)
            tar.addfile(info, io.BytesIO(raw))
    return path


class IndexPath(unittest.TestCase):
    def test_crates_io_layout(self):
        self.assertEqual(lr.index_path("a"), "1/a")
        self.assertEqual(lr.index_path("ab"), "2/ab")
        self.assertEqual(lr.index_path("abc"), "3/a/abc")
        self.assertEqual(lr.index_path("Serde_JSON"), "se/rd/serde_json")


class IndexEntry(unittest.TestCase):
    MANIFEST = """
[package]
name = "demo"
version = "1.2.3"
rust-version = "1.80"
links = "demo"

[features]
default = ["std"]
std = []
tls = ["dep:rustls"]

[dependencies.serde]
version = "1.0"
features = ["derive"]

[dependencies.rustls]
version = "0.23"
optional = true
default-features = false

[dependencies.renamed]
version = "2"
package = "real-name"

[dev-dependencies.proptest]
version = "1"

[build-dependencies]
cc = "1.2"

[target."cfg(unix)".dependencies.libc]
version = "0.2"
"""

    def entry(self):
        return lr.index_entry(tomllib.loads(self.MANIFEST), "00" * 32)

    def test_package_fields(self):
        e = self.entry()
        self.assertEqual((e["name"], e["vers"], e["cksum"]), ("demo", "1.2.3", "00" * 32))
        self.assertEqual((e["links"], e["rust_version"], e["yanked"], e["v"]), ("demo", "1.80", False, 2))
        self.assertEqual(e["features"]["tls"], ["dep:rustls"])

    def test_dependencies(self):
        deps = {d["name"]: d for d in self.entry()["deps"]}
        self.assertEqual(deps["serde"]["features"], ["derive"])
        self.assertEqual(deps["serde"]["kind"], "normal")
        self.assertFalse(deps["rustls"]["default_features"])
        self.assertTrue(deps["rustls"]["optional"])
        self.assertEqual(deps["renamed"]["package"], "real-name")
        self.assertEqual(deps["proptest"]["kind"], "dev")
        self.assertEqual((deps["cc"]["kind"], deps["cc"]["req"]), ("build", "1.2"))
        self.assertEqual(deps["libc"]["target"], "cfg(unix)")
        self.assertIsNone(deps["serde"]["target"])

    def test_old_underscore_spellings(self):
        manifest = tomllib.loads("""
[package]
name = "old"
version = "0.1.0"

[dependencies.a]
version = "1"
default_features = false

[dev_dependencies.b]
version = "1"
""")
        deps = {d["name"]: d for d in lr.index_entry(manifest, "x")["deps"]}
        self.assertFalse(deps["a"]["default_features"])
        self.assertEqual(deps["b"]["kind"], "dev")


class Build(unittest.TestCase):
    def test_registry_from_crates_and_a_lock(self):
        with tempfile.TemporaryDirectory() as tmp:
            cache = os.path.join(tmp, "cache")
            os.makedirs(cache)
            ours = make_crate(tmp, "ours", "0.1.0", '[package]\nname = "ours"\nversion = "0.1.0"\n'
                              '[dependencies.dep]\nversion = "1"\n')
            make_crate(cache, "dep", "1.0.0", '[package]\nname = "dep"\nversion = "1.0.0"\n')
            lock = os.path.join(tmp, "Cargo.lock")
            with open(lock, "w") as f:
                f.write(f'version = 4\n[[package]]\nname = "dep"\nversion = "1.0.0"\nsource = "{lr.CRATES_IO}"\n')
            out = os.path.join(tmp, "registry")
            self.assertEqual(lr.build(out, [ours], [lock], [os.path.join(tmp, "elsewhere"), cache]), 2)
            with open(os.path.join(out, "index", "3", "d", "dep")) as f:
                self.assertEqual(json.loads(f.readline())["vers"], "1.0.0")
            self.assertTrue(os.path.exists(os.path.join(out, "ours-0.1.0.crate")))

    def test_missing_from_the_cache_says_so(self):
        with tempfile.TemporaryDirectory() as tmp:
            lock = os.path.join(tmp, "Cargo.lock")
            with open(lock, "w") as f:
                f.write(f'version = 4\n[[package]]\nname = "gone"\nversion = "2.0.0"\nsource = "{lr.CRATES_IO}"\n')
            with self.assertRaises(SystemExit) as e:
                lr.build(os.path.join(tmp, "r"), [], [lock], [tmp])
            self.assertIn("gone-2.0.0", str(e.exception))


def metadata(**package):
    """cargo metadata's shape for a workspace of one published crate (and an unpublished one)."""
    base = {
        "id": "p", "name": "kelson-x", "version": "0.1.0", "description": "d",
        "license": "Apache-2.0", "repository": "https://example.invalid/r", "readme": "README.md",
        "keywords": ["mcp"], "categories": ["network-programming"], "rust_version": "1.95",
        "publish": None, "dependencies": [],
    }
    base.update(package)
    private = dict(base, id="t", name="kelson-testenv", publish=[], dependencies=[])
    return {"workspace_members": ["p", "t"], "packages": [base, private]}


class Manifests(unittest.TestCase):
    def test_a_complete_crate_passes(self):
        problems, names, newest = cp.check_manifests(metadata(), "1.95.0")
        self.assertEqual((problems, names, newest), ([], ["kelson-x"], None))

    def test_missing_and_wrong_fields(self):
        problems, *_ = cp.check_manifests(
            metadata(description=None, keywords=["Not Valid"], categories=["mcp-servers"],
                     rust_version="1.94"), "1.95.0")
        text = "\n".join(problems)
        for part in ("no description", "'Not Valid'", "'mcp-servers'", "rust-version 1.94"):
            self.assertIn(part, text)

    def test_path_dependency_needs_a_version_except_dev(self):
        deps = [
            {"name": "kelson-y", "path": "/p", "req": "*", "kind": None},
            {"name": "kelson-testenv", "path": "/t", "req": "*", "kind": "dev"},
        ]
        problems, *_ = cp.check_manifests(metadata(dependencies=deps), "1.95.0")
        self.assertEqual(problems, ["kelson-x: its dependency on kelson-y has a path but no version"])

    def test_a_normal_dependency_on_an_unpublished_crate(self):
        deps = [{"name": "kelson-testenv", "path": "/t", "req": "^0.1.0", "kind": None}]
        problems, *_ = cp.check_manifests(metadata(dependencies=deps), "1.95.0")
        self.assertEqual(problems, ["kelson-x: depends on the unpublished kelson-testenv"])

    def test_a_dependency_newer_than_the_msrv(self):
        m = metadata()
        m["packages"].append({"id": "d", "name": "dep", "version": "1.0.0", "rust_version": "1.96"})
        problems, *_ = cp.check_manifests(m, "1.95.0")
        self.assertEqual(problems, ["dep 1.0.0 needs Rust 1.96, newer than 1.95.0"])


class Contents(unittest.TestCase):
    def test_package_contents(self):
        manifest = '[package]\nname = "kelson-x"\nversion = "0.1.0"\nrust-version = "1.95"\n'
        with tempfile.TemporaryDirectory() as tmp:
            good = make_crate(tmp, "kelson-x", "0.1.0", manifest,
                              {"README.md": "r", "LICENSE": b"licence", "src/lib.rs": ""})
            problems, rows = cp.check_contents(b"licence", [good])
            self.assertEqual(problems, [])
            self.assertEqual((rows[0][0], rows[0][3]), ("kelson-x-0.1.0", 4))
            bad = make_crate(tmp, "kelson-y", "0.1.0", manifest.replace('rust-version = "1.95"\n', ""),
                             {"LICENSE": b"other", "src/lib.rs": "", "tests/data.json": "{}"})
            problems, _ = cp.check_contents(b"licence", [bad])
            text = "\n".join(problems)
            for part in ("no README.md", "LICENSE differs", "no rust-version", "carries tests/data.json"):
                self.assertIn(part, text)


if __name__ == "__main__":
    unittest.main()
