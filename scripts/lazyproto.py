"""lazyproto - what scripts/gen-lazy-ssh2 and scripts/gen-lazy-curl share:
the prototypes of an installed header, the functions an archive calls, and
one wrapper's text.  Not a program; imported by those two."""
import re
import subprocess

CC = "cc"


def archive(name):
    """The path of libNAME.a as the compiler finds it, or None."""
    p = subprocess.run([CC, "-print-file-name=lib%s.a" % name], capture_output=True, text=True).stdout.strip()
    return p if "/" in p else None


def undefined(path):
    """The symbols the archive at path uses and does not define itself."""
    und, dfn = set(), set()
    out = subprocess.run(["nm", path], capture_output=True, text=True).stdout
    for l in out.splitlines():
        f = l.split()
        if len(f) == 2 and f[0] == "U":
            und.add(f[1])
        elif len(f) == 3:
            dfn.add(f[2])
    return und - dfn


def defined_by(soname_lib):
    """(soname, the functions a shared library defines) for libNAME.so."""
    so = subprocess.run([CC, "-print-file-name=lib%s.so" % soname_lib], capture_output=True, text=True).stdout.strip()
    dyn = subprocess.run(["readelf", "-d", so], capture_output=True, text=True).stdout
    soname = re.search(r"\(SONAME\).*\[(.*)\]", dyn).group(1)
    out = subprocess.run(["nm", "-D", "--defined-only", so], capture_output=True, text=True).stdout
    funcs = {l.split()[2].split("@")[0] for l in out.splitlines() if len(l.split()) == 3 and l.split()[1] in "TW"}
    return soname, funcs


def prototypes(includes, prelude=""):
    """{name: (return type, parameter list)} of the functions the headers
    declare (prelude: C text before them, e.g. a #define)."""
    src = prelude + "".join("#include <%s>\n" % h for h in includes)
    pre = subprocess.run([CC, "-E", "-P", "-x", "c", "-"], input=src, capture_output=True, text=True,
                         check=True).stdout
    pre = " ".join(pre.split())
    protos = {}
    for m in re.finditer(r"(?:^|(?<=[;}]))\s*([^;{}()]*?)\b(\w+)\s*\(((?:[^()]|\((?:[^()]|\([^()]*\))*\))*)\)"
                         r"\s*(?:__attribute__\s*\(\((?:[^()]|\([^()]*\))*\)\)\s*)*;", pre):
        ret = re.sub(r"\b(extern|__attribute__\s*\(\(.*?\)\))\s*", "", m.group(1)).strip()
        if ret and not ret.startswith("typedef"):
            protos[m.group(2)] = (ret, m.group(3).strip())
    return protos


BUILTIN = {"void", "char", "short", "int", "long", "float", "double", "signed", "unsigned", "_Bool"}
QUALIFIER = {"const", "volatile", "restrict", "__restrict", "struct", "union", "enum"}


def named(p, i):
    """(parameter p with a name, that name): its own, or aI when the header
    gives none ("X509 *", "const SSL_CTX", "int (*)(int)")."""
    m = re.search(r"\(\s*\*\s*(\w*)\s*\)", p)
    if m:   # a function pointer
        if m.group(1):
            return p, m.group(1)
        return p[:m.start()] + "(*a%d)" % i + p[m.end():], "a%d" % i
    base = re.sub(r"\[[^\]]*\]\s*$", "", p).strip()
    words = [w for w in re.findall(r"\w+", base) if w not in QUALIFIER]
    if base.endswith("*") or len(words) < 2 or words[-1] in BUILTIN:
        return base + " a%d" % i + p.strip()[len(base):], "a%d" % i
    return p.strip(), words[-1]


def wrapper(name, proto):
    """A definition of name that forwards to p_name, found by LAZY(name);
    None when it cannot be written (variadic, or unnamed parameters)."""
    ret, args = proto
    params = [] if args in ("", "void") else re.split(r",(?![^()]*\))", args)
    if any(p.strip() == "..." for p in params):
        return None
    params = [named(p, i) for i, p in enumerate(params)]
    call = ", ".join(n for _, n in params)
    decl = ", ".join(p for p, _ in params) or "void"
    body = "return " if ret != "void" else ""
    return "%s %s(%s)\n{\n\tLAZY(%s)\n\t%sp_%s(%s);\n}\n" % (ret, name, decl, name, body, name, call)
