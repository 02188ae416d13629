#!/usr/bin/env python3
"""udevd.py: udev's rule processing for a simulated host (tests/host/fakehost.sh).

    udevd.py ROOT ACTION CLASS/NAME [--old NAME]   one kernel event, and the events it causes
    udevd.py --selftest                            the matching semantics on a scratch tree

It processes one uevent the way systemd-udevd does (systemd's src/udev/udev-rules.c, man
udev(7)), for the keys the rules on a fake host use:

- the rules files of ROOT/etc/udev/rules.d, ROOT/run/udev/rules.d, ROOT/usr/lib/udev/rules.d and
  ROOT/lib/udev/rules.d, read in the lexical order of their names; a file in /etc hides one of the
  same name further down the list;
- match keys ACTION, SUBSYSTEM, KERNEL, DEVPATH, DRIVER, ATTR{x}, ENV{x} of the device itself,
  and KERNELS, SUBSYSTEMS, DRIVERS, ATTRS{x}, which match the device or one of its parents; all
  the parent keys of a rule must match on the same device of that walk (udev-rules.c: the walk
  stops at the first device where every one of them matches). `==` and `!=`; a value is a
  shell glob (*, ?, [...]) and `|` separates alternatives;
- PROGRAM runs at once and matches when it exits 0 (its first line becomes RESULT); RUN+= (and
  RUN= which replaces the list) runs after the whole rule set has been processed, in order;
  ENV{x}= and ENV{x}+= set event properties; NAME, SYMLINK, TAG, OPTIONS and GOTO/LABEL are
  accepted (GOTO jumps to its LABEL in the same file); anything else is an error;
- substitutions %k $kernel %p $devpath %% $$.

The device is read from the fake sysfs: ROOT/sys/class/CLASS/NAME is the device (its subsystem is
CLASS); its `device` link leads to the PCI function (subsystem pci, as the function is listed in
ROOT/sys/bus/pci/devices; its driver the basename of its `driver` link), and the folders above
that, up to sys/devices, are the parents above (no subsystem). Every attribute is a file in the
device's folder. A rule that renames the device (rdma-core's rdma_rename, through its PROGRAM)
leaves the event's own folder gone, so later ATTR{} of the device match nothing while the parent
keys still do, as on a real host.

Programs run under the fake root only: a name without a slash is looked up in ROOT/usr/lib/udev
and ROOT/lib/udev (udev's own folder), an absolute path under ROOT, and /bin, /sbin, /usr/bin and
/usr/sbin also in ROOT/bin (where the fake host keeps its tools); a program the fake host does
not have is logged and not run, never the machine's. They get the event's properties and
ROCE_GEN_ROOT, PATH and STUB_LOG of the fake host.

An event a program causes (the kernel's `move` after a rename: stand-ins append
"ACTION CLASS/NAME OLDNAME" lines to ROOT/.fake/udev/queue) is processed after the current one.
Every event and every key that acted is printed on stdout, as "udev: ..." lines.
"""

import fnmatch
import os
import re
import shlex
import subprocess
import sys
import tempfile

RULE_DIRS = ["etc/udev/rules.d", "run/udev/rules.d", "usr/lib/udev/rules.d", "lib/udev/rules.d"]
DEVICE_KEYS = {"ACTION", "SUBSYSTEM", "KERNEL", "DEVPATH", "DRIVER", "ATTR", "ENV", "RESULT"}
PARENT_KEYS = {"KERNELS", "SUBSYSTEMS", "DRIVERS", "ATTRS"}
ASSIGN_ONLY = {"RUN", "NAME", "SYMLINK", "TAG", "OPTIONS", "GOTO", "LABEL"}
TOKEN = re.compile(r'\s*([A-Z_]+)(?:\{([^}]*)\})?\s*(==|!=|\+=|-=|:=|=)\s*"((?:[^"\\]|\\.)*)"\s*(?:,|$)')


class RuleError(Exception):
    pass


def parse_rules(path):
    """[(line number, [(key, attr, op, value)])] of one rules file."""
    rules = []
    with open(path, encoding="utf-8", errors="replace") as f:
        lines = f.read().split("\n")
    i = 0
    while i < len(lines):
        start = i + 1
        line = lines[i]
        while line.endswith("\\") and i + 1 < len(lines):
            i += 1
            line = line[:-1] + lines[i]
        i += 1
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        tokens, pos = [], 0
        while pos < len(text):
            m = TOKEN.match(text, pos)
            if not m:
                raise RuleError(f"{path}:{start}: cannot parse {text[pos:]!r}")
            key, attr, op, value = m.groups()
            if key not in DEVICE_KEYS | PARENT_KEYS | ASSIGN_ONLY | {"PROGRAM"}:
                raise RuleError(f"{path}:{start}: key {key} is not modelled")
            tokens.append((key, attr, op, value))
            pos = m.end()
        rules.append((start, tokens))
    return rules


def rule_files(root):
    seen = {}
    for d in RULE_DIRS:
        full = os.path.join(root, d)
        if os.path.isdir(full):
            for name in os.listdir(full):
                if name.endswith(".rules") and name not in seen:
                    seen[name] = os.path.join(full, name)
    return [seen[n] for n in sorted(seen)]


def pattern_match(pattern, value):
    """udev's match: glob alternatives separated by |; no value matches only an empty pattern."""
    if value is None:
        value = ""
    return any(fnmatch.fnmatchcase(value, alt) for alt in pattern.split("|"))


class Device:
    def __init__(self, folder, sysname, subsystem, driver, devpath):
        self.folder, self.sysname, self.subsystem, self.driver, self.devpath = (
            folder, sysname, subsystem, driver, devpath)

    def attr(self, name):
        path = os.path.join(self.folder, name)
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                return f.read().rstrip("\n").strip()
        except OSError:
            return None


def chain(root, cls, name):
    """The device ROOT/sys/class/CLS/NAME and its parents, nearest first."""
    folder = os.path.join(root, "sys/class", cls, name)
    devices_root = os.path.join(root, "sys/devices")
    parent = os.path.realpath(os.path.join(folder, "device")) if os.path.islink(os.path.join(folder, "device")) else None
    rel = os.path.relpath(parent, devices_root) if parent else ""
    devpath = f"/devices/{rel}/{cls}/{name}" if parent else f"/devices/virtual/{cls}/{name}"
    out = [Device(folder, name, cls, None, devpath)]
    p = parent
    while p and p.startswith(devices_root + "/"):
        sysname = os.path.basename(p)
        pci = os.path.exists(os.path.join(root, "sys/bus/pci/devices", sysname))
        drv = os.path.join(p, "driver")
        driver = os.path.basename(os.readlink(drv)) if os.path.islink(drv) else None
        out.append(Device(p, sysname, "pci" if pci else None, driver,
                          "/devices/" + os.path.relpath(p, devices_root)))
        p = os.path.dirname(p)
    return out


def substitute(text, env):
    out, i = "", 0
    while i < len(text):
        c = text[i]
        if c in "%$" and i + 1 < len(text):
            if text[i + 1] == c:
                out += c
                i += 2
                continue
            if c == "%" and text[i + 1] in "kp":
                out += env["KERNEL"] if text[i + 1] == "k" else env["DEVPATH"]
                i += 2
                continue
            for word, key in (("kernel", "KERNEL"), ("devpath", "DEVPATH")):
                if c == "$" and text.startswith(word, i + 1):
                    out += env[key]
                    i += 1 + len(word)
                    break
            else:
                out += c
                i += 1
            continue
        out += c
        i += 1
    return out


def resolve(root, prog):
    if "/" not in prog:
        cands = [os.path.join(root, "usr/lib/udev", prog), os.path.join(root, "lib/udev", prog)]
    else:
        cands = [root + prog]
        m = re.match(r"^/(?:usr/)?s?bin/([^/]+)$", prog)
        if m:
            cands.append(os.path.join(root, "bin", m.group(1)))
    for c in cands:
        if os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    return None


def run(root, cmdline, env, log):
    argv = shlex.split(cmdline)
    prog = resolve(root, argv[0]) if argv else None
    if prog is None:
        log(f"not run: {cmdline} (the fake host has no {argv[0] if argv else 'program'})")
        return None, ""
    penv = {k: v for k, v in env.items() if k in ("ACTION", "DEVPATH", "DEVPATH_OLD", "SUBSYSTEM", "NAME", "SEQNUM")}
    penv.update(ROCE_GEN_ROOT=root, PATH=f"{root}/bin:/usr/bin:/bin",
                STUB_LOG=os.environ.get("STUB_LOG", os.path.join(root, "stub.log")))
    if os.environ.get("FAKEHOST_BASH"):
        penv["FAKEHOST_BASH"] = os.environ["FAKEHOST_BASH"]
    p = subprocess.run([prog] + argv[1:], env=penv, stdin=subprocess.DEVNULL,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=root, timeout=180)
    return p.returncode, p.stdout.decode("utf-8", "replace")


def process(root, action, cls, name, old=None, seqnum=1, out=print):
    """One event: the rules' matches, PROGRAMs at once, RUN at the end. Returns the RUN list."""
    devs = chain(root, cls, name)
    dev = devs[0]
    env = {"ACTION": action, "DEVPATH": dev.devpath, "SUBSYSTEM": cls, "KERNEL": name,
           "SEQNUM": str(seqnum)}
    if cls == "infiniband":
        env["NAME"] = name  # ib_device_uevent adds NAME=
    if old:
        env["DEVPATH_OLD"] = dev.devpath.rsplit("/", 1)[0] + "/" + old
    props = {}
    result = None
    runs = []
    what = f"udev: {action} {dev.devpath}" + (f" (was {env['DEVPATH_OLD']})" if old else "")
    out(what)
    log = lambda m: out(f"udev:   {m}")  # noqa: E731
    for path in rule_files(root):
        rel = os.path.relpath(path, root)
        rules = parse_rules(path)
        goto = None
        for lineno, tokens in rules:
            keys = {t[0] for t in tokens}
            if goto is not None:
                if any(k == "LABEL" and v == goto for k, _, _, v in tokens):
                    goto = None
                else:
                    continue
            ok = True
            # Device keys and PROGRAM in order; parent keys together on one device of the walk.
            parents = [t for t in tokens if t[0] in PARENT_KEYS and t[2] in ("==", "!=")]
            if parents:
                def on(d):
                    for key, attr, op, value in parents:
                        got = {"KERNELS": d.sysname, "SUBSYSTEMS": d.subsystem,
                               "DRIVERS": d.driver, "ATTRS": d.attr(attr or "")}[key]
                        if key == "ATTRS" and got is None:
                            return False
                        if pattern_match(value, got) != (op == "=="):
                            return False
                    return True
                ok = any(on(d) for d in devs)
            if not ok:
                continue
            acted = []
            for key, attr, op, value in tokens:
                if key in PARENT_KEYS or key in ("LABEL",):
                    continue
                if op in ("==", "!="):
                    if key == "PROGRAM":
                        raise RuleError(f"{rel}:{lineno}: PROGRAM is run with =, not {op}")
                    got = {"ACTION": action, "SUBSYSTEM": cls, "KERNEL": name, "DEVPATH": dev.devpath,
                           "DRIVER": dev.driver, "RESULT": result}.get(key)
                    if key == "ATTR":
                        got = dev.attr(attr or "")
                        if got is None:
                            ok = False
                            break
                    if key == "ENV":
                        got = props.get(attr, env.get(attr))
                    if pattern_match(value, got) != (op == "=="):
                        ok = False
                        break
                    continue
                if key == "PROGRAM":
                    cmd = substitute(value, env)
                    rc, stdout = run(root, cmd, env, log)
                    acted.append(f'PROGRAM="{cmd}": ' + ("not run" if rc is None else f"exit {rc}"))
                    if rc != 0:
                        ok = False
                        break
                    result = stdout.split("\n")[0]
                    continue
                if key == "RUN":
                    cmd = substitute(value, env)
                    if op in ("=", ":="):
                        runs = []
                    runs.append((rel, lineno, cmd))
                    acted.append(f'RUN{op}"{cmd}"')
                elif key == "ENV":
                    props[attr] = (props.get(attr, "") + " " + value).strip() if op == "+=" else value
                    acted.append(f'ENV{{{attr}}}{op}"{value}"')
                elif key == "GOTO":
                    goto = value
                    acted.append(f'GOTO="{value}"')
                else:
                    acted.append(f'{key}{op}"{value}"')
            if ok:
                for a in acted:
                    log(f"{rel}:{lineno}: {a}")
            elif acted:
                for a in acted:
                    log(f"{rel}:{lineno}: {a} (no match)")
            del keys
    for rel, lineno, cmd in runs:
        rc, _ = run(root, cmd, env, log)
        if rc is not None:
            log(f"ran {cmd} ({rel}:{lineno}): exit {rc}")
    return runs


def main(argv):
    if argv[1:2] == ["--selftest"]:
        return selftest()
    if len(argv) not in (4, 6) or (len(argv) == 6 and argv[4] != "--old") or "/" not in argv[3]:
        print("usage: udevd.py ROOT ACTION CLASS/NAME [--old NAME] | --selftest", file=sys.stderr)
        return 2
    root = os.path.realpath(argv[1])
    if not os.path.isdir(os.path.join(root, ".fake")):
        print(f"udevd.py: {root} is not a fake host root", file=sys.stderr)
        return 2
    queue = os.path.join(root, ".fake/udev/queue")
    events = [(argv[2], argv[3], argv[5] if len(argv) == 6 else None)]
    seq = 1
    try:
        while events:
            action, what, old = events.pop(0)
            cls, name = what.split("/", 1)
            process(root, action, cls, name, old, seq)
            seq += 1
            if os.path.exists(queue):
                with open(queue, encoding="utf-8") as f:
                    for line in f:
                        w = line.split()
                        if len(w) >= 2:
                            events.append((w[0], w[1], w[2] if len(w) > 2 else None))
                os.unlink(queue)
    except RuleError as e:
        print(f"udevd.py: {e}", file=sys.stderr)
        return 2
    return 0


def selftest():
    """The matching semantics against a scratch tree: globs, |, !=, the parent walk."""
    fails = []

    def check(name, got, want):
        if got != want:
            fails.append(f"{name}: got {got!r}, want {want!r}")

    with tempfile.TemporaryDirectory() as t:
        pci = os.path.join(t, "sys/devices/pci0000:00/0000:1a:00.0")
        os.makedirs(os.path.join(t, ".fake"))
        os.makedirs(os.path.join(t, "sys/class/infiniband/mlx5_0"))
        os.makedirs(os.path.join(pci, "infiniband"))
        os.makedirs(os.path.join(t, "sys/bus/pci/devices"))
        os.makedirs(os.path.join(t, "sys/bus/pci/drivers/mlx5_core"))
        os.symlink("../../../devices/pci0000:00/0000:1a:00.0", os.path.join(t, "sys/bus/pci/devices/0000:1a:00.0"))
        os.symlink("../../../bus/pci/drivers/mlx5_core", os.path.join(pci, "driver"))
        os.symlink("../../../devices/pci0000:00/0000:1a:00.0", os.path.join(t, "sys/class/infiniband/mlx5_0/device"))
        with open(os.path.join(pci, "vendor"), "w") as f:
            f.write("0x15b3\n")
        with open(os.path.join(t, "sys/class/infiniband/mlx5_0/node_type"), "w") as f:
            f.write("1: CA\n")
        rules = os.path.join(t, "etc/udev/rules.d")
        os.makedirs(rules)
        cases = [
            ('ACTION=="add", SUBSYSTEM=="infiniband", KERNELS=="0000:1a:00.0"', True),
            ('ACTION=="add", KERNELS=="0000:3c:00.0|0000:1a:00.0"', True),
            ('ACTION=="add|move", KERNEL=="mlx5_*"', True),
            ('ACTION=="add", KERNEL=="rocep*"', False),
            ('ACTION=="move", KERNELS=="0000:1a:00.0"', False),
            ('KERNELS=="0000:1a:00.?", DRIVERS=="mlx5_core", ATTRS{vendor}=="0x15b3"', True),
            # the parent keys must hold on one device: the ib device has no driver, the PCI
            # function is not called mlx5_0
            ('KERNELS=="mlx5_0", DRIVERS=="mlx5_core"', False),
            ('KERNELS=="mlx5_0", SUBSYSTEMS=="infiniband"', True),
            ('SUBSYSTEMS=="pci", KERNELS=="0000:1a:00.0"', True),
            ('ATTR{node_type}=="1: CA"', True),
            ('ATTR{vendor}=="0x15b3"', False),  # the device's own attribute, not the parent's
            ('ATTRS{nosuch}!="x"', False),  # an attribute no device has matches nothing
            ('SUBSYSTEM!="net", KERNEL=="mlx5_[0-9]"', True),
            ('KERNEL=="mlx5_1|mlx5_2"', False),
        ]
        for i, (rule, want) in enumerate(cases):
            for f in os.listdir(rules):
                os.unlink(os.path.join(rules, f))
            with open(os.path.join(rules, "50-t.rules"), "w") as f:
                f.write(f'# case {i}\n{rule}, RUN+="/bin/nothing"\n')
            lines = []
            runs = process(t, "add", "infiniband", "mlx5_0", out=lines.append)
            check(f"case {i} {rule}", bool(runs), want)
        check("devpath", chain(t, "infiniband", "mlx5_0")[0].devpath,
              "/devices/pci0000:00/0000:1a:00.0/infiniband/mlx5_0")
        check("substitute", substitute("rdma_rename %k NAME_FALLBACK $kernel %% $$", {"KERNEL": "mlx5_0", "DEVPATH": "/d"}),
              "rdma_rename mlx5_0 NAME_FALLBACK mlx5_0 % $")
        # /etc hides a file of the same name in /usr/lib; files run in name order.
        os.makedirs(os.path.join(t, "usr/lib/udev/rules.d"))
        with open(os.path.join(t, "usr/lib/udev/rules.d/50-t.rules"), "w") as f:
            f.write('KERNEL=="*", RUN+="/bin/hidden"\n')
        with open(os.path.join(t, "usr/lib/udev/rules.d/40-a.rules"), "w") as f:
            f.write('KERNEL=="*", RUN+="/bin/first"\n')
        with open(os.path.join(rules, "50-t.rules"), "w") as f:
            f.write('KERNEL=="*", RUN+="/bin/second"\n')
        runs = process(t, "add", "infiniband", "mlx5_0", out=lambda m: None)
        check("order and /etc over /usr/lib", [r[2] for r in runs], ["/bin/first", "/bin/second"])
        with open(os.path.join(rules, "50-t.rules"), "w") as f:
            f.write('KERNEL=="*", FOO=="x"\n')
        try:
            process(t, "add", "infiniband", "mlx5_0", out=lambda m: None)
            fails.append("an unknown key is refused: it was not")
        except RuleError:
            pass
    for f in fails:
        print(f"FAIL {f}")
    print(f"udevd selftest: {len(fails)} failed")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
