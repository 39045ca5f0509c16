#!/usr/bin/env python3
"""Compares the .proto files of this module with Chalk's published contract (shared/contract/*.md).

The contract lists, per proto file, every service (RPCs with their streaming kind), enum (values and
numbers) and message (fields with number, name, label, type and oneof membership, nested enums). This
script compiles proto/src/main/proto with protoc into a descriptor set (or reads one given with
--descriptor), decodes it with a small wire-format reader (no Python protobuf package needed) and checks:

  mismatch  something declared in both differs: a field's number, name, label (optional / repeated /
            map), type or oneof; a field or value present on one side only; declaration order; an
            enum value; an RPC's streaming kind or types; a type declared in another file than the
            contract's; a type of a contract package that the contract does not have; the Java
            options (java_multiple_files, java_package = ai.chalk.compute.proto.<area>.<ver>).
  missing   a contract type that the protos do not declare (yet). Packages here are often a subset of
            Chalk's (see the comment at the top of each file); this is reported but does not fail,
            unless the package is named with --require-complete.
  outside   types the contract references without defining (e.g. chalk.argo.v1.ArgoWorkflow): they
            must be declared as empty placeholders, never with guessed fields.

Exit status: 0 when there is no mismatch, 1 otherwise, 2 on a usage or setup error.

Usage (from the repository root or anywhere):
  python3 proto/verify-contract.py                 # all contract files, protoc from ~/.m2
  python3 proto/verify-contract.py --contract DIR --descriptor FILE.binpb --require-complete chalk.arrow.v1
"""

import argparse
import glob
import os
import re
import subprocess
import sys
import tempfile
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
PROTO_ROOT = os.path.join(HERE, "src", "main", "proto")
JAVA_PACKAGE_PREFIX = "ai.chalk.compute.proto."

# ---------------------------------------------------------------------------------------------------
# The contract's markdown
# ---------------------------------------------------------------------------------------------------

SECTION_RE = re.compile(r"^## `([\w.]+)` \(from ([\w./]+)\)\s*$")
SERVICE_RE = re.compile(r"^\*\*service (\w+)\*\*\s*$")
RPC_RE = re.compile(r"^- `(\w+)` (unary|bidi|server-stream|client-stream): ([\w.]+) → ([\w.]+)\s*$")
ENUM_RE = re.compile(r"^- enum \*\*(\w+)\*\*: (.*)$")
MESSAGE_RE = re.compile(r"^- \*\*(\w+)\*\*: (.*)$")
FIELD_RE = re.compile(r"^(\d+) `(\w+)` (?:(optional|repeated) )?(\S+?)(?: \[oneof (\w+)\])?$")
NESTED_ENUM_RE = re.compile(r"^enum (\w+): (.*)$")
VALUE_RE = re.compile(r"^(\w+)=(-?\d+)$")

SCALARS = {"double", "float", "int64", "uint64", "int32", "fixed64", "fixed32", "bool", "string",
           "bytes", "uint32", "sfixed32", "sfixed64", "sint32", "sint64"}


class ContractError(Exception):
    pass


def parse_values(text, where):
    values = []
    for part in text.split(","):
        m = VALUE_RE.match(part.strip())
        if not m:
            raise ContractError(f"{where}: cannot read enum value {part.strip()!r}")
        values.append((m.group(1), int(m.group(2))))
    return values


def parse_field(text, where):
    m = FIELD_RE.match(text)
    if not m:
        raise ContractError(f"{where}: cannot read field {text!r}")
    number, name, label, type_, oneof = m.groups()
    if type_.startswith("map<"):
        if label:
            raise ContractError(f"{where}: a map cannot be {label}: {text!r}")
        label = "map"
    return {"number": int(number), "name": name, "label": label or "", "type": type_, "oneof": oneof}


def parse_contract(paths):
    """Returns {(package, file): {"messages": {...}, "enums": {...}, "services": {...}, "md": path}}.

    A message is {"fields": [field...], "enums": {name: [(value, number)...]}} in contract order."""
    sections = {}
    for path in paths:
        current = None
        service = None
        with open(path, encoding="utf-8") as f:
            for lineno, raw in enumerate(f, 1):
                line = raw.rstrip("\n")
                where = f"{os.path.basename(path)}:{lineno}"
                if not line.strip():
                    continue
                m = SECTION_RE.match(line)
                if m:
                    key = (m.group(1), m.group(2))
                    current = sections.setdefault(key, {"messages": {}, "enums": {}, "services": {}, "md": path})
                    service = None
                    continue
                if current is None:
                    raise ContractError(f"{where}: line before any '## `package` (from file)' heading: {line!r}")
                m = SERVICE_RE.match(line)
                if m:
                    service = current["services"].setdefault(m.group(1), [])
                    continue
                m = RPC_RE.match(line)
                if m:
                    if service is None:
                        raise ContractError(f"{where}: RPC outside a service: {line!r}")
                    service.append(m.groups())
                    continue
                service = None
                m = ENUM_RE.match(line)
                if m:
                    current["enums"][m.group(1)] = parse_values(m.group(2), where)
                    continue
                m = MESSAGE_RE.match(line)
                if m:
                    body = m.group(2).strip()
                    message = {"fields": [], "enums": {}}
                    if body != "(empty)":
                        for item in body.split(" · "):
                            item = item.strip()
                            n = NESTED_ENUM_RE.match(item)
                            if n:
                                message["enums"][n.group(1)] = parse_values(n.group(2), where)
                            else:
                                message["fields"].append(parse_field(item, where))
                    current["messages"][m.group(1)] = message
                    continue
                raise ContractError(f"{where}: unrecognised line: {line!r}")
    return sections


# ---------------------------------------------------------------------------------------------------
# Descriptor sets: a minimal reader of the protobuf wire format, for descriptor.proto's fields we use
# ---------------------------------------------------------------------------------------------------

def read_varint(buf, pos):
    result = shift = 0
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7


def decode(buf):
    """Yields (field number, wire type, value) where value is an int or a bytes slice."""
    pos = 0
    while pos < len(buf):
        key, pos = read_varint(buf, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = read_varint(buf, pos)
        elif wire == 1:
            value, pos = int.from_bytes(buf[pos:pos + 8], "little"), pos + 8
        elif wire == 2:
            length, pos = read_varint(buf, pos)
            value, pos = bytes(buf[pos:pos + length]), pos + length
        elif wire == 5:
            value, pos = int.from_bytes(buf[pos:pos + 4], "little"), pos + 4
        else:
            raise ValueError(f"unsupported wire type {wire}")
        yield number, wire, value


def as_int32(value):
    value &= 0xFFFFFFFFFFFFFFFF
    return value - (1 << 64) if value >= 1 << 63 else value


def read_message(buf, schema):
    """schema: {number: (name, kind, repeated)}; kind is 'str', 'int', 'bool' or a nested schema."""
    out = {name: ([] if repeated else None) for name, _, repeated in schema.values()}
    for number, _, value in decode(buf):
        if number not in schema:
            continue
        name, kind, repeated = schema[number]
        if kind == "str":
            value = value.decode("utf-8")
        elif kind == "int":
            value = as_int32(value)
        elif kind == "bool":
            value = bool(value)
        else:
            value = read_message(value, kind)
        if repeated:
            out[name].append(value)
        else:
            out[name] = value
    return out


ENUM_VALUE = {1: ("name", "str", False), 2: ("number", "int", False)}
ENUM = {1: ("name", "str", False), 2: ("value", ENUM_VALUE, True)}
FIELD = {1: ("name", "str", False), 3: ("number", "int", False), 4: ("label", "int", False),
         5: ("type", "int", False), 6: ("type_name", "str", False), 9: ("oneof_index", "int", False),
         17: ("proto3_optional", "bool", False)}
ONEOF = {1: ("name", "str", False)}
MESSAGE_OPTIONS = {7: ("map_entry", "bool", False)}
MESSAGE = {1: ("name", "str", False), 2: ("field", FIELD, True), 4: ("enum_type", ENUM, True),
           7: ("options", MESSAGE_OPTIONS, False), 8: ("oneof_decl", ONEOF, True)}
MESSAGE[3] = ("nested_type", MESSAGE, True)
METHOD = {1: ("name", "str", False), 2: ("input_type", "str", False), 3: ("output_type", "str", False),
          5: ("client_streaming", "bool", False), 6: ("server_streaming", "bool", False)}
SERVICE = {1: ("name", "str", False), 2: ("method", METHOD, True)}
FILE_OPTIONS = {1: ("java_package", "str", False), 10: ("java_multiple_files", "bool", False)}
FILE = {1: ("name", "str", False), 2: ("package", "str", False), 4: ("message_type", MESSAGE, True),
        5: ("enum_type", ENUM, True), 6: ("service", SERVICE, True), 8: ("options", FILE_OPTIONS, False)}
FILE_SET = {1: ("file", FILE, True)}

TYPE_NAMES = {1: "double", 2: "float", 3: "int64", 4: "uint64", 5: "int32", 6: "fixed64", 7: "fixed32",
              8: "bool", 9: "string", 10: "group", 12: "bytes", 13: "uint32", 15: "sfixed32",
              16: "sfixed64", 17: "sint32", 18: "sint64"}
LABEL_REPEATED = 3


def relative_type(type_name, package, scope):
    """'.chalk.arrow.v1.Field' in package chalk.arrow.v1 -> 'Field'; a type nested in the message being
    read ('.chalk.sandbox.v1.OutputData.Stream' in OutputData) -> 'Stream'; others stay qualified."""
    name = type_name.lstrip(".")
    if name.startswith(package + "."):
        name = name[len(package) + 1:]
        if name.startswith(scope + "."):
            name = name[len(scope) + 1:]
        return name
    return name


def proto_message(msg, package, file_name):
    nested = {n["name"]: n for n in msg["nested_type"]}
    out = {"fields": [], "enums": {}, "nested": [], "file": file_name}
    for e in msg["enum_type"]:
        out["enums"][e["name"]] = [(v["name"], v["number"]) for v in e["value"]]
    for n in msg["nested_type"]:
        if not (n["options"] and n["options"]["map_entry"]):
            out["nested"].append(n["name"])
    for f in msg["field"]:
        label = ""
        if f["type"] in (11, 14):
            type_ = relative_type(f["type_name"], package, msg["name"])
        else:
            type_ = TYPE_NAMES[f["type"]]
        entry = nested.get(f["type_name"].rsplit(".", 1)[-1]) if f["type_name"] else None
        if f["label"] == LABEL_REPEATED and entry and entry["options"] and entry["options"]["map_entry"]:
            key, value = sorted(entry["field"], key=lambda x: x["number"])
            kv = [relative_type(x["type_name"], package, msg["name"]) if x["type"] in (11, 14) else TYPE_NAMES[x["type"]]
                  for x in (key, value)]
            label, type_ = "map", f"map<{kv[0]},{kv[1]}>"
        elif f["label"] == LABEL_REPEATED:
            label = "repeated"
        elif f["proto3_optional"]:
            label = "optional"
        oneof = None
        if f["oneof_index"] is not None and not f["proto3_optional"]:
            oneof = msg["oneof_decl"][f["oneof_index"]]["name"]
        out["fields"].append({"number": f["number"], "name": f["name"], "label": label, "type": type_, "oneof": oneof})
    return out


def load_descriptors(path):
    with open(path, "rb") as f:
        fileset = read_message(f.read(), FILE_SET)
    files = {}
    for fd in fileset["file"]:
        if fd["name"].startswith("google/"):
            continue
        package = fd["package"]
        entry = {"package": package, "options": fd["options"] or {}, "messages": {}, "enums": {}, "services": {}}
        for m in fd["message_type"]:
            entry["messages"][m["name"]] = proto_message(m, package, fd["name"])
        for e in fd["enum_type"]:
            entry["enums"][e["name"]] = [(v["name"], v["number"]) for v in e["value"]]
        for s in fd["service"]:
            rpcs = []
            for m in s["method"]:
                kind = {(False, False): "unary", (True, True): "bidi", (False, True): "server-stream",
                        (True, False): "client-stream"}[(bool(m["client_streaming"]), bool(m["server_streaming"]))]
                rpcs.append((m["name"], kind, relative_type(m["input_type"], package, ""),
                             relative_type(m["output_type"], package, "")))
            entry["services"][s["name"]] = rpcs
        files[fd["name"]] = entry
    return files


# ---------------------------------------------------------------------------------------------------
# Compiling the protos when no descriptor set is given
# ---------------------------------------------------------------------------------------------------

def m2_repository():
    return os.environ.get("M2_REPO") or os.path.join(os.path.expanduser("~"), ".m2", "repository")


def version_key(path):
    version = os.path.basename(os.path.dirname(path))
    return [int(x) if x.isdigit() else x for x in re.split(r"[.-]", version)]


def find_protoc():
    found = sorted(glob.glob(os.path.join(m2_repository(), "com/google/protobuf/protoc/*/protoc-*-linux-x86_64.exe")),
                   key=version_key)
    if not found:
        raise SystemExit("no protoc under ~/.m2 (run './mvnw -pl proto compile' once, or pass --protoc or --descriptor)")
    return found[-1]


def well_known_types(dest):
    """Extracts google/protobuf/*.proto from the protobuf-java jar that matches the newest protoc."""
    jars = sorted(glob.glob(os.path.join(m2_repository(), "com/google/protobuf/protobuf-java/*/protobuf-java-*.jar")),
                  key=version_key)
    jars = [j for j in jars if not j.endswith(("-sources.jar", "-javadoc.jar"))]
    if not jars:
        raise SystemExit("no protobuf-java jar under ~/.m2 for the well-known types")
    with zipfile.ZipFile(jars[-1]) as z:
        for name in z.namelist():
            if name.startswith("google/protobuf/") and name.endswith(".proto"):
                z.extract(name, dest)


def compile_protos(protoc, out):
    sources = sorted(os.path.relpath(p, PROTO_ROOT)
                     for p in glob.glob(os.path.join(PROTO_ROOT, "**", "*.proto"), recursive=True))
    with tempfile.TemporaryDirectory() as wkt:
        well_known_types(wkt)
        if not os.access(protoc, os.X_OK):
            os.chmod(protoc, os.stat(protoc).st_mode | 0o111)
        cmd = [protoc, f"-I{PROTO_ROOT}", f"-I{wkt}", f"--descriptor_set_out={out}", *sources]
        result = subprocess.run(cmd, capture_output=True, text=True)
        if result.returncode != 0:
            raise SystemExit(f"protoc failed:\n{result.stderr}")


# ---------------------------------------------------------------------------------------------------
# Comparison
# ---------------------------------------------------------------------------------------------------

def fmt_field(f):
    label = f"{f['label']} " if f["label"] and f["label"] != "map" else ""
    oneof = f" [oneof {f['oneof']}]" if f["oneof"] else ""
    return f"{f['number']} `{f['name']}` {label}{f['type']}{oneof}"


def compare_values(kind, name, want, got, problems):
    if want == got:
        return
    want_d, got_d = dict(want), dict(got)
    for v, n in want:
        if v not in got_d:
            problems.append(f"{kind} {name}: value {v}={n} missing")
        elif got_d[v] != n:
            problems.append(f"{kind} {name}: value {v} is {got_d[v]}, contract says {n}")
    for v, n in got:
        if v not in want_d:
            problems.append(f"{kind} {name}: value {v}={n} not in the contract")
    if not problems and [v for v, _ in want] != [v for v, _ in got]:
        problems.append(f"{kind} {name}: values declared in another order than the contract's")


def compare_message(name, want, got):
    problems = []
    got_by_number = {f["number"]: f for f in got["fields"]}
    want_numbers = {f["number"] for f in want["fields"]}
    for f in want["fields"]:
        g = got_by_number.get(f["number"])
        if g is None:
            problems.append(f"message {name}: field {fmt_field(f)} missing")
        elif g != f:
            problems.append(f"message {name}: field is {fmt_field(g)}, contract says {fmt_field(f)}")
    for g in got["fields"]:
        if g["number"] not in want_numbers:
            problems.append(f"message {name}: field {fmt_field(g)} not in the contract")
    if not problems and [f["number"] for f in want["fields"]] != [f["number"] for f in got["fields"]]:
        problems.append(f"message {name}: fields declared in order {[f['number'] for f in got['fields']]}, "
                        f"contract says {[f['number'] for f in want['fields']]}")
    for e, values in want["enums"].items():
        if e not in got["enums"]:
            problems.append(f"message {name}: nested enum {e} missing")
        else:
            compare_values("enum", f"{name}.{e}", values, got["enums"][e], problems)
    for e in got["enums"]:
        if e not in want["enums"]:
            problems.append(f"message {name}: nested enum {e} not in the contract")
    for n in got["nested"]:
        problems.append(f"message {name}: nested message {n} not in the contract")
    return problems


def referenced_types(sections, files):
    """Qualified names of the types used by the fields and RPCs of the contract files that have a proto."""
    refs = set()
    for (package, file_name), s in sections.items():
        if file_name not in files:
            continue
        def qualify(t, scope):
            t = t[4:-1].split(",")[1] if t.startswith("map<") else t
            if t in SCALARS:
                return None
            if "." in t:
                return t
            if scope and t in sections_nested.get((package, scope), ()):
                return None
            return f"{package}.{t}"
        for m_name, m in s["messages"].items():
            for f in m["fields"]:
                q = qualify(f["type"], m_name)
                if q:
                    refs.add(q)
        for rpcs in s["services"].values():
            for _, _, req, resp in rpcs:
                refs.update(filter(None, (qualify(req, None), qualify(resp, None))))
    return refs


sections_nested = {}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--contract", default=None,
                        help="folder of the contract's .md files (default: shared/contract beside the repository)")
    parser.add_argument("--descriptor", help="a descriptor set (protoc --descriptor_set_out) instead of compiling")
    parser.add_argument("--protoc", help="the protoc binary (default: the newest under ~/.m2)")
    parser.add_argument("--require-complete", action="append", default=[], metavar="PACKAGE",
                        help="fail when a type of this package is missing (repeatable)")
    parser.add_argument("-v", "--verbose", action="store_true", help="list the missing types by name")
    parser.add_argument("files", nargs="*", help="contract .md files (default: all in --contract)")
    args = parser.parse_args()

    contract_dir = args.contract
    if contract_dir is None:
        repo = os.path.dirname(HERE)
        candidates = [os.path.join(os.path.dirname(repo), "shared", "contract"), os.path.join(repo, "shared", "contract")]
        contract_dir = next((c for c in candidates if os.path.isdir(c)), candidates[0])
    md_files = args.files or sorted(glob.glob(os.path.join(contract_dir, "*.md")))
    if not md_files:
        print(f"no contract files in {contract_dir}", file=sys.stderr)
        return 2
    try:
        sections = parse_contract(md_files)
    except ContractError as e:
        print(f"contract: {e}", file=sys.stderr)
        return 2
    for (package, _), s in sections.items():
        for m_name, m in s["messages"].items():
            sections_nested[(package, m_name)] = set(m["enums"])

    if args.descriptor:
        files = load_descriptors(args.descriptor)
        source = args.descriptor
    else:
        protoc = args.protoc or find_protoc()
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "protos.binpb")
            compile_protos(protoc, out)
            files = load_descriptors(out)
        source = f"{os.path.relpath(PROTO_ROOT)} compiled with {protoc}"
    print(f"contract: {len(md_files)} files in {contract_dir}")
    print(f"protos:   {len(files)} files, {source}")

    # where each type is declared, per package
    declared = {}
    for file_name, fd in files.items():
        for kind in ("messages", "enums", "services"):
            for name in fd[kind]:
                declared.setdefault(fd["package"], {})[(kind, name)] = file_name
    contract_types = {}
    for (package, file_name), s in sections.items():
        for kind in ("messages", "enums", "services"):
            for name in s[kind]:
                contract_types.setdefault(package, {})[(kind, name)] = file_name

    mismatches = []
    incomplete = []
    report = []
    singular = {"messages": "message", "enums": "enum", "services": "service"}

    for (package, file_name), s in sorted(sections.items()):
        total = sum(len(s[k]) for k in ("messages", "enums", "services"))
        if package not in declared:
            report.append((package, file_name, "no proto", total, total, []))
            continue
        missing = []
        problems = []
        for kind in ("messages", "enums", "services"):
            for name, want in s[kind].items():
                where = declared[package].get((kind, name))
                if where is None:
                    missing.append(f"{singular[kind]} {name}")
                    continue
                if where != file_name:
                    problems.append(f"{singular[kind]} {name} is declared in {where}, the contract says {file_name}")
                got = files[where][kind][name]
                if kind == "messages":
                    problems += compare_message(name, want, got)
                elif kind == "enums":
                    compare_values("enum", name, want, got, problems)
                else:
                    want_rpcs, got_rpcs = want, got
                    for rpc in want_rpcs:
                        match = [r for r in got_rpcs if r[0] == rpc[0]]
                        if not match:
                            problems.append(f"service {name}: rpc {rpc[0]} missing")
                        elif match[0] != rpc:
                            problems.append(f"service {name}: rpc {match[0][0]} is {match[0][1]}: {match[0][2]} → {match[0][3]}, "
                                            f"contract says {rpc[1]}: {rpc[2]} → {rpc[3]}")
                    for r in got_rpcs:
                        if r[0] not in {w[0] for w in want_rpcs}:
                            problems.append(f"service {name}: rpc {r[0]} not in the contract")
                    if not problems and [r[0] for r in want_rpcs] != [r[0] for r in got_rpcs]:
                        problems.append(f"service {name}: rpcs declared in another order than the contract's")
        state = "ok" if not missing else ("no file" if file_name not in files else "partial")
        report.append((package, file_name, state, total, len(missing), missing))
        mismatches += [f"{package} ({file_name}): {p}" for p in problems]
        if missing and package in args.require_complete:
            incomplete.append(f"{package} ({file_name}): {len(missing)} missing: {', '.join(missing)}")

    # types of contract packages that the contract does not have; Java options of every file
    referenced = referenced_types(sections, files)
    for file_name, fd in sorted(files.items()):
        package = fd["package"]
        area = package[len("chalk."):] if package.startswith("chalk.") else package
        options = fd["options"]
        if not options.get("java_multiple_files"):
            mismatches.append(f"{file_name}: option java_multiple_files = true is missing")
        if options.get("java_package") != JAVA_PACKAGE_PREFIX + area:
            mismatches.append(f"{file_name}: java_package is {options.get('java_package')!r}, "
                              f"the convention says {JAVA_PACKAGE_PREFIX + area!r}")
        if package not in contract_types:
            continue
        for kind in ("messages", "enums", "services"):
            for name in fd[kind]:
                # a type the contract references without defining is checked below, as a placeholder
                if (kind, name) not in contract_types[package] and f"{package}.{name}" not in referenced:
                    mismatches.append(f"{package} ({file_name}): {singular[kind]} {name} is not in the contract")

    # types the contract references but never defines: they must be empty placeholders here
    outside = []
    for q in sorted(referenced):
        package, _, name = q.rpartition(".")
        if package == "google.protobuf" or ("messages", name) in contract_types.get(package, {}) \
                or ("enums", name) in contract_types.get(package, {}):
            continue
        where = declared.get(package, {}).get(("messages", name)) or declared.get(package, {}).get(("enums", name))
        if where is None:
            outside.append(f"{q}: not declared")
        else:
            got = files[where]["messages"].get(name)
            if got is not None and got["fields"]:
                mismatches.append(f"{q} ({where}): not in the contract, but declared with fields "
                                  f"{[fmt_field(f) for f in got['fields']]}; declare it empty")
            else:
                outside.append(f"{q}: declared empty in {where}")

    print()
    print(f"{'package':34} {'contract file':46} {'state':8} {'types':>5} {'missing':>7}")
    for package, file_name, state, total, n_missing, missing in report:
        print(f"{package:34} {file_name:46} {state:8} {total:5} {n_missing:7}")
        if args.verbose and missing and state != "no proto":
            print(f"    missing: {', '.join(missing)}")
    if outside:
        print("\nreferenced by the contract without a definition in it:")
        for o in outside:
            print(f"  {o}")
    if incomplete:
        print("\nincomplete (--require-complete):")
        for i in incomplete:
            print(f"  {i}")
    print(f"\nmismatches: {len(mismatches)}")
    for m in mismatches:
        print(f"  {m}")
    return 1 if mismatches or incomplete else 0


if __name__ == "__main__":
    sys.exit(main())
