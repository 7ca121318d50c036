#!/usr/bin/env python3
"""The module-definition (.def) files of cgram's Windows drop-in, a proxy
llama.dll (scripts/install-llama-dropin-windows.sh, and the CMake build in
adapters/llama/dropin/windows/), and the checks of a built proxy.

The proxy takes the place of llama.cpp's llama.dll; llama.cpp's own DLL is
renamed (llama-cgram-original.dll) beside it. The proxy must export every
name the original exports (programs and llama.cpp's other DLLs import
them by name), so the .def is made from the original's export table:

    llama_proxy.py defs DLL --proxy-name NAME --original-name ORIGINAL
                   --header cgram_llama.h --proxy-def OUT --original-def OUT

        OUT (proxy): LIBRARY NAME; every export of DLL as a forwarder
        ("llama_decode = llama-cgram-original.llama_decode", data exports
        too: the loader binds the importer straight to the original), but
        the four grammar entry points the drop-in replaces, which the
        proxy defines; then the adapter's functions (the cgram_llama_*
        functions cgram_llama.h declares).
        OUT (original): LIBRARY ORIGINAL with llama.cpp's C API (the
        llama_* exports), for the import library the proxy links: the
        adapter calls those functions, in the original.

    llama_proxy.py check PROXY ORIGINAL --original-name ORIGINAL --header H
        Fails unless PROXY exports exactly the names of ORIGINAL plus the
        adapter's, each of ORIGINAL's a forwarder to ORIGINAL's module
        except the replaced entry points, which must not be.

    llama_proxy.py is-proxy DLL
        Exit status 0 when DLL is a cgram proxy (it exports
        cgram_llama_sampler_is_cgram).

Standard library only, so that it runs on Windows too (CMake calls it).
"""

import argparse
import os
import re
import sys

# The PE reader of scripts/lib/abi.py, beside this file.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import abi  # noqa: E402

# The entry points cgram_llama_dropin.c defines; all other names forward.
REPLACED = (
    "llama_sampler_init_grammar",
    "llama_sampler_init_grammar_lazy",
    "llama_sampler_init_grammar_lazy_patterns",
    "llama_model_free",
)

# Names a .def file carries unquoted (C names, MinGW's C++ names; MSVC's
# decorated names use ?, @ and $).
DEF_NAME = re.compile(r"^[A-Za-z0-9_?@$.]+$")


def pe_exports(path):
    """{name: forwarder string or None} of a PE file's export table."""
    return abi.pe_export_table(open(path, "rb").read())


def adapter_functions(header):
    """The cgram_llama_* functions cgram_llama.h declares."""
    text = open(header, encoding="utf-8").read()
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    return sorted(set(re.findall(r"\b(cgram_llama_\w+)\s*\(", text)))


def module_of(dll_name):
    """The module part of a forwarder: the DLL's name without .dll."""
    return dll_name[:-4] if dll_name.lower().endswith(".dll") else dll_name


def cmd_defs(args):
    exports = pe_exports(args.dll)
    if "llama_sampler_init_grammar" not in exports:
        raise SystemExit(f"llama_proxy.py: {args.dll} has no llama_sampler_init_grammar: not llama.cpp's DLL?")
    if any(f for f in exports.values()):
        raise SystemExit(f"llama_proxy.py: {args.dll} forwards exports itself: a proxy already, not llama.cpp's DLL")
    odd = [n for n in exports if not DEF_NAME.match(n)]
    if odd:
        raise SystemExit(f"llama_proxy.py: {args.dll} exports names a .def file cannot carry: {odd[:3]}")
    module = module_of(args.original_name)
    if "." in module:
        raise SystemExit("llama_proxy.py: the original's name must have no dot before .dll (forwarders split at it)")
    adapter = adapter_functions(args.header)
    clash = sorted(set(adapter) & set(exports))
    if clash:
        raise SystemExit(f"llama_proxy.py: {args.dll} already exports {clash[0]}")
    with open(args.proxy_def, "w") as f:
        f.write(f"LIBRARY {args.proxy_name}\nEXPORTS\n")
        for name in sorted(exports):
            f.write(f"    {name}\n" if name in REPLACED else f"    {name} = {module}.{name}\n")
        for name in adapter:
            f.write(f"    {name}\n")
    with open(args.original_def, "w") as f:
        f.write(f"LIBRARY {args.original_name}\nEXPORTS\n")
        for name in sorted(exports):
            if name.startswith("llama_"):
                f.write(f"    {name}\n")
    n_replaced = sum(1 for n in exports if n in REPLACED)
    print(f"{len(exports)} exports: {len(exports) - n_replaced} forwarded, {n_replaced} replaced; "
          f"{len(adapter)} cgram_llama_* functions")
    return 0


def cmd_check(args):
    proxy, original = pe_exports(args.proxy), pe_exports(args.original)
    adapter = set(adapter_functions(args.header))
    module = module_of(args.original_name)
    problems = []
    missing = sorted(set(original) - set(proxy))
    extra = sorted(set(proxy) - set(original) - adapter)
    if missing:
        problems.append(f"{len(missing)} of the original's exports are missing, e.g. {missing[:3]}")
    if extra:
        problems.append(f"{len(extra)} exports that are neither llama.cpp's nor the adapter's, e.g. {extra[:3]}")
    for name in sorted(adapter - set(proxy)):
        problems.append(f"the adapter's {name} is not exported")
    forwarded = 0
    for name in sorted(set(original) & set(proxy)):
        want = None if name in REPLACED else f"{module}.{name}"
        if proxy[name] != want:
            got = f"forwarded to {proxy[name]}" if proxy[name] else "not forwarded"
            wanted = f"forwarded to {want}" if want else "the proxy's own"
            problems.append(f"{name}: {got}, want {wanted}")
        elif want:
            forwarded += 1
    for name in sorted(adapter & set(proxy)):
        if proxy[name]:
            problems.append(f"{name} is a forwarder")
    if problems:
        for p in problems[:20]:
            print(f"llama_proxy.py: {args.proxy}: {p}", file=sys.stderr)
        return 1
    replaced = sorted(set(original) & set(REPLACED))
    print(f"{args.proxy}: {forwarded} of {len(original)} exports forwarded to {args.original_name}, "
          f"{len(replaced)} replaced, {len(adapter)} cgram_llama_* functions")
    return 0


def cmd_is_proxy(args):
    return 0 if "cgram_llama_sampler_is_cgram" in pe_exports(args.dll) else 1


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("defs")
    p.add_argument("dll")
    p.add_argument("--proxy-name", required=True)
    p.add_argument("--original-name", required=True)
    p.add_argument("--header", required=True)
    p.add_argument("--proxy-def", required=True)
    p.add_argument("--original-def", required=True)
    p = sub.add_parser("check")
    p.add_argument("proxy")
    p.add_argument("original")
    p.add_argument("--original-name", required=True)
    p.add_argument("--header", required=True)
    p = sub.add_parser("is-proxy")
    p.add_argument("dll")
    args = parser.parse_args()
    return {"defs": cmd_defs, "check": cmd_check, "is-proxy": cmd_is_proxy}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
