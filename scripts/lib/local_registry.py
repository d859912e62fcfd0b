#!/usr/bin/env python3
"""Makes a cargo local registry out of .crate files, for scripts/check-packages.

A local registry is a folder of NAME-VERSION.crate files beside an index in the layout of
crates.io's (index/2/ab, index/3/a/abc, index/ab/cd/abcd), one JSON line per version. Replacing the
crates-io source with it lets cargo resolve, download and build exactly what a user of the
published crates would get, with no network and without the repository around them: our packaged
crates (target/package/*.crate, whose checksums the packaged Cargo.lock files already carry) and
the crates.io packages those lock files name, taken from cargo's download cache.

Each index line is written from the package's own normalized Cargo.toml, as crates.io writes it
from the manifest it receives.

    local_registry.py --out DIR --crate A.crate --crate B.crate ... --lock A/Cargo.lock ... \
        --cache ~/.cargo/registry/cache/index.crates.io-HASH
"""

import argparse
import hashlib
import json
import os
import sys
import tarfile
import tomllib

CRATES_IO = "registry+https://github.com/rust-lang/crates.io-index"


def index_path(name):
    """Where NAME's index file lives under index/, as cargo looks for it."""
    name = name.lower()
    if len(name) == 1:
        return os.path.join("1", name)
    if len(name) == 2:
        return os.path.join("2", name)
    if len(name) == 3:
        return os.path.join("3", name[0], name)
    return os.path.join(name[:2], name[2:4], name)


def _get(table, *keys, default=None):
    """The first of KEYS present in TABLE (old normalized manifests spell some with `_`)."""
    for key in keys:
        if key in table:
            return table[key]
    return default


def _deps(table, kind, target):
    out = []
    for name, spec in sorted(table.items()):
        if isinstance(spec, str):
            spec = {"version": spec}
        dep = {
            "name": name,
            "req": spec.get("version", "*"),
            "features": list(spec.get("features", [])),
            "optional": bool(spec.get("optional", False)),
            "default_features": bool(_get(spec, "default-features", "default_features", default=True)),
            "target": target,
            "kind": kind,
        }
        if "package" in spec:
            dep["package"] = spec["package"]
        out.append(dep)
    return out


def index_entry(manifest, cksum):
    """The index line (a dict) for one version, from its normalized Cargo.toml."""
    package = manifest["package"]
    kinds = (
        ("normal", ("dependencies",)),
        ("dev", ("dev-dependencies", "dev_dependencies")),
        ("build", ("build-dependencies", "build_dependencies")),
    )
    deps = []
    for kind, keys in kinds:
        deps += _deps(_get(manifest, *keys, default={}), kind, None)
    for target, tables in sorted(manifest.get("target", {}).items()):
        for kind, keys in kinds:
            deps += _deps(_get(tables, *keys, default={}), kind, target)
    entry = {
        "name": package["name"],
        "vers": package["version"],
        "deps": deps,
        "cksum": cksum,
        # Features that name `dep:` or `x?/y` are what crates.io puts in features2 under v2; cargo
        # merges both maps, so one map under v2 reads the same.
        "features": manifest.get("features", {}),
        "yanked": False,
        "v": 2,
    }
    if "links" in package:
        entry["links"] = package["links"]
    rust_version = _get(package, "rust-version", "rust_version")
    if isinstance(rust_version, str):
        entry["rust_version"] = rust_version
    return entry


def read_crate(path):
    """(normalized manifest, sha256) of a .crate file."""
    with open(path, "rb") as f:
        data = f.read()
    cksum = hashlib.sha256(data).hexdigest()
    with tarfile.open(path, "r:gz") as tar:
        manifest = None
        for member in tar.getmembers():
            parts = member.name.split("/")
            if len(parts) == 2 and parts[1] == "Cargo.toml":
                manifest = tomllib.loads(tar.extractfile(member).read().decode("utf-8"))
                break
    if manifest is None:
        raise SystemExit(f"local_registry: {path} has no Cargo.toml at its top")
    return manifest, cksum


def registry_packages(lock_paths):
    """{(name, version): checksum} of every crates.io package the lock files name."""
    wanted = {}
    for path in lock_paths:
        with open(path, "rb") as f:
            lock = tomllib.load(f)
        for package in lock.get("package", []):
            if package.get("source") == CRATES_IO:
                wanted[(package["name"], package["version"])] = package.get("checksum")
    return wanted


def build(out, crates, locks, caches):
    """Writes the registry into OUT; returns how many versions it holds."""
    os.makedirs(os.path.join(out, "index"), exist_ok=True)
    entries = {}
    files = {}
    own = set()
    for path in crates:
        manifest, cksum = read_crate(path)
        key = (manifest["package"]["name"], manifest["package"]["version"])
        entries[key] = index_entry(manifest, cksum)
        files[key] = os.path.abspath(path)
        own.add(key)
    missing = []
    for key, checksum in sorted(registry_packages(locks).items()):
        if key in own:
            # One of ours: the lock file's checksum must be the one of the .crate just made.
            if checksum and checksum != entries[key]["cksum"]:
                raise SystemExit(
                    f"local_registry: the lock files expect {key[0]} {key[1]} with checksum "
                    f"{checksum}, the packaged .crate has {entries[key]['cksum']}"
                )
            continue
        found = [os.path.join(c, f"{key[0]}-{key[1]}.crate") for c in caches]
        found = [p for p in found if os.path.exists(p)]
        if not found:
            missing.append(f"{key[0]}-{key[1]}")
            continue
        path = found[0]
        manifest, cksum = read_crate(path)
        if checksum and checksum != cksum:
            raise SystemExit(f"local_registry: {path} does not have the lock file's checksum")
        entries[key] = index_entry(manifest, cksum)
        files[key] = os.path.abspath(path)
    if missing:
        raise SystemExit(
            "local_registry: not in cargo's download cache (run `cargo fetch --locked` in the "
            "workspace first): " + ", ".join(missing)
        )
    by_name = {}
    for (name, _), entry in entries.items():
        by_name.setdefault(name, []).append(entry)
    for name, versions in by_name.items():
        path = os.path.join(out, "index", index_path(name))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            for entry in versions:
                f.write(json.dumps(entry, separators=(",", ":")) + "\n")
    for (name, version), path in files.items():
        link = os.path.join(out, f"{name}-{version}.crate")
        if os.path.lexists(link):
            os.remove(link)
        os.symlink(path, link)
    return len(entries)


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="the registry folder to write")
    parser.add_argument("--crate", action="append", default=[], help="a packaged .crate of ours")
    parser.add_argument("--lock", action="append", default=[], help="a Cargo.lock whose crates.io packages to add")
    parser.add_argument("--cache", action="append", required=True,
                        help="cargo's .crate download cache for crates.io (several are searched in order)")
    args = parser.parse_args(argv)
    count = build(args.out, args.crate, args.lock, args.cache)
    print(f"local_registry: {count} versions in {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1:])
