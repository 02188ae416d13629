#!/usr/bin/python3
"""driverfs: the kernel's attribute semantics for a simulated host's sysfs and configfs.

A fake host (tests/host/fakehost.sh) keeps its /sys as plain files under ROOT/sys, so a write
the real kernel refuses (EINVAL) "succeeds" there and a script's bug stays hidden. driverfs is a
FUSE filesystem that `fakehost.sh run` mounts over ROOT/sys for the time of one run:

    driverfs.py [--ready-fd N] ROOT

It opens ROOT/sys before mounting over it and serves every request from that directory (the
"backing"), so outside a run tests still read and write the plain files. Everything is passed
through unchanged except the attributes below, which behave as the mlx5 / mlnx-ofa_kernel
drivers make them behave (sources named at each handler):

  class/infiniband/DEV/tc/N/traffic_class    verbs traffic class and per-address rules (OFED
                                              main_ext.c)
  class/infiniband/DEV/ports/N/gids/M,        the GID table: an unused entry (blank backing)
    gid_attrs/types/M, gid_attrs/ndevs/M      reads as the zero GID, its type and netdev as
                                              EINVAL; read-only (core/sysfs.c)
  class/net/IF/ecn/roce_{np,rp}/...           ECN enable per priority, CNP and DCQCN
                                              parameters (OFED en_ecn.c, mlx5_ifc.h)
  class/net/IF/mtu                            netdev MTU (net/core/net-sysfs.c, mlx5e limits)
  kernel/config/rdma_cm/...                   RDMA-CM defaults in configfs (cma_configfs.c)
  class/net/IF/carrier, operstate,            the link, down for a while after the driver
    class/infiniband/DEV/ports/N/state,       toggled it (a PFC change: en_dcbnl.c
    phys_state                                mlx5e_dcbnl_ieee_setpfc calls port.c
                                              mlx5_toggle_port_link), see below

In every attribute file: reads are rendered by the kernel's show function, writes go through
its store function (one store per write(2); the file offset is ignored) and O_TRUNC or
truncate(2) does nothing, as on sysfs. The backing file keeps the kernel's value in the plain
form a snapshot shows ("106", "" when the traffic class is unset). Attribute files report
st_size 4096 like sysfs and configfs; every file is opened with direct_io so reads always
reach the daemon.

RDMA-CM: `mkdir kernel/config/rdma_cm/DEV` needs class/infiniband/DEV (else ENODEV) and
creates ports/N/default_roce_mode and default_roce_tos for each port of DEV (the numeric
folders of class/infiniband/DEV/ports, at least one). The values belong to the kernel's cma
device, not to the folder: while the folder exists its two files hold them; `rmdir` keeps them
in ROOT/.fake/cma/DEV/N/{mode,tos} (no file: the driver default, RoCE v2 and ToS 0) and the
next mkdir brings them back. Tests may write those files to set the kernel's value up;
fakehost.sh reload clears them.

The link: a PFC change toggles the port (the stand-ins' DCB model, stubs/mlx5-dcb.sh, appends
a line to ROOT/.fake/dcb/IF/flaps). For ROOT/.fake/net/IF/flap_seconds seconds after that file
was last written (default 1; `never`: the link does not come back) the netdev has no carrier and
its RDMA port is down, as the kernel then shows it: carrier "0" (net-sysfs.c carrier_show, the
interface being up), operstate "down" (rfc2863_policy: no carrier, no lower device),
ports/N/state "1: DOWN" and phys_state "3: Disabled" (mlx5_ib's mlx5_query_port_roce takes both
from netif_carrier_ok), and the tools that read those files (ip, ethtool, ibdev2netdev) see the
same. Time-based, so a script that reads too early sees the link down; the flap log's contents
stay the only trace in a snapshot. The RDMA device's netdev is the one its PCI function has
(class/infiniband/DEV/device, then devices/.../net/).

A wedged firmware: a file of sys/ named (relative to sys/, one a line) in ROOT/.fake/wedged takes
ROOT/.fake/wedged_seconds (default 600) to answer each read(2) and write(2), as an mlx5 command
that the firmware does not complete holds the caller in the kernel (cmd.c waits for the command
uninterruptibly until its timeout); the caller cannot be killed meanwhile (FUSE answers a killed
caller's request only when the daemon does). The daemon serves other requests meanwhile (it is
multithreaded), as the rest of sysfs stays readable on a real host.

With --ready-fd N the daemon writes "ready" to file descriptor N once the kernel has mounted
the filesystem, and keeps N open until it exits, so the caller can wait for both. It exits when
the filesystem is unmounted, on SIGTERM/SIGINT/SIGHUP (unmounting it), and when its parent
dies. Needs Python 3 and the FUSE binding fusepy (Debian: python3-fusepy, with libfuse2).
"""

import ctypes
import errno
import os
import re
import signal
import stat
import sys
import time

ATTR_SIZE = 4096  # st_size of every sysfs and configfs attribute
SPACE = b" \t\n\v\f\r"  # the kernel's isspace()
HEX = frozenset(b"0123456789abcdefABCDEF")

# ---------------------------------------------------------------------------------------
# The kernel's number parsers (lib/kstrtox.c, lib/vsprintf.c), on bytes.


def _err(code, what=""):
    return OSError(code, os.strerror(code) + (": " + what if what else ""))


def _parse_ull(s, base):
    """lib/kstrtox.c _kstrtoull(): digits, one optional trailing newline, nothing else."""
    if base == 0:
        if s[:1] == b"0":
            base = 16 if s[1:2] in (b"x", b"X") and len(s) > 2 and s[2] in HEX else 8
        else:
            base = 10
    if base == 16 and s[:1] == b"0" and s[1:2] in (b"x", b"X"):
        s = s[2:]
    value = 0
    n = 0
    for c in s:
        if 48 <= c <= 57:
            d = c - 48
        elif 97 <= (c | 0x20) <= 102:
            d = (c | 0x20) - 87
        else:
            break
        if d >= base:
            break
        value = value * base + d
        n += 1
    if value >= 1 << 64:
        raise _err(errno.ERANGE)
    if n == 0:
        raise _err(errno.EINVAL)
    rest = s[n:]
    if rest[:1] == b"\n":
        rest = rest[1:]
    if rest:
        raise _err(errno.EINVAL)
    return value


def kstrtoull(s, base=0):
    if s[:1] == b"+":
        s = s[1:]
    return _parse_ull(s, base)


def kstrtoll(s, base=0):
    if s[:1] == b"-":
        v = _parse_ull(s[1:], base)
        if v > 1 << 63:
            raise _err(errno.ERANGE)
        return -v
    v = kstrtoull(s, base)
    if v >= 1 << 63:
        raise _err(errno.ERANGE)
    return v


def kstrtoint(s, base=0):
    v = kstrtoll(s, base)
    if not -(1 << 31) <= v < 1 << 31:
        raise _err(errno.ERANGE)
    return v


def kstrtou8(s, base=0):
    v = kstrtoull(s, base)
    if v > 0xFF:
        raise _err(errno.ERANGE)
    return v


def s32(v):
    """The low 32 bits as a C int."""
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v & 0x80000000 else v


def sscanf_d(s):
    """The kernel's sscanf(buf, "%d", &v): leading blanks, an optional '-', decimal digits;
    anything after them is ignored. None when nothing converts."""
    s = s.split(b"\0", 1)[0].lstrip(SPACE)
    m = re.match(rb"-?[0-9]+", s)
    return s32(int(m.group())) if m else None


def cstr(data):
    return data.split(b"\0", 1)[0]


def _stored_int(raw):
    """The integer a backing file holds (its last number, so older formats still read)."""
    m = re.search(rb"(-?[0-9]+)\s*$", raw)
    return int(m.group(1)) if m else None


# ---------------------------------------------------------------------------------------
# Attributes. show(raw_backing) -> bytes; store(data, raw_backing) -> (new_backing, count).


class TrafficClass:
    """class/infiniband/DEV/tc/N/traffic_class, mlnx-ofa_kernel drivers/infiniband/hw/mlx5/
    main_ext.c. traffic_class_show prints "Global tclass=%d\\n" only while tcd->val >= 0
    (init_tc_sysfs starts it at -1: nothing), then each per-address rule (tcd->rule[], at most
    TCLASS_MAX_RULES = 40) as the parse_tree's print functions write it, in that order:
    "src_ip=%pI4," "dst_ip=%pI4/%d," (hweight32 of the mask; no or a 0 prefix length is 32)
    "src_ip6=%pI6," "dst_ip6=%pI6," "tclass=%d\\n". traffic_class_store: more than
    TCLASS_MAX_CMD (100) bytes is EINVAL; tclass_parse_input splits at ',', skips empty tokens,
    strim()s each and matches it against the parse_tree prefixes "src_ip=", "dst_ip=",
    "src_ip6=", "dst_ip6=", "tclass=" and "" (check_string_match needs the token longer than the
    prefix, so a blank token matches nothing: EINVAL); addresses go through in4_pton/in6_pton
    (a dst_ip may end in /N, 0..32), the number through kstrtoint(.., 0, ..) and must be <= 0xff;
    a command without a tclass, or with IPv4 and IPv6 fields, is EINVAL (tclass_verify_match).
    A tclass alone sets the global value ("-1", any negative, clears it); with fields it sets
    the rule of the same fields and addresses (tclass_find_match without the mask), a negative
    tclass deletes it, a 41st rule is ENOMEM; then the rules are sorted with those that have a
    dst_ip first, longer prefixes first (tclass_compare_match; the kernel's heapsort leaves ties
    in an order this model does not reproduce: it keeps them in insertion order). The backing
    file holds the global value on its first line ("106", empty when unset) and the rules as
    shown, one a line."""

    order = (b"src_ip", b"dst_ip", b"src_ip6", b"dst_ip6")

    @staticmethod
    def _backing(raw):
        lines = raw.split(b"\n")
        m = re.search(rb"(-?[0-9]+)\s*$", lines[0].strip(SPACE))
        val = int(m.group(1)) if m else -1
        return val, [line for line in lines[1:] if line.strip(SPACE)]

    @staticmethod
    def _ip4(text):
        m = re.match(rb"([0-9]{1,3})\.([0-9]{1,3})\.([0-9]{1,3})\.([0-9]{1,3})", text)
        if not m or any(int(x) > 255 for x in m.groups()):
            raise _err(errno.EINVAL)
        return bytes(int(x) for x in m.groups()), text[m.end():]

    @staticmethod
    def _ip6(text):
        import ipaddress

        try:
            return ipaddress.IPv6Address(text.decode()).packed
        except ValueError:
            raise _err(errno.EINVAL) from None

    @classmethod
    def _parse(cls, data):
        """A command as tclass_parse_input reads it: (fields, tclass); fields maps a field to
        its value, the address bytes (dst_ip: and its prefix length)."""
        if len(data) > 100:
            raise _err(errno.EINVAL)
        fields, tclass = {}, None
        for tok in cstr(data).split(b","):
            if not tok:
                continue
            tok = tok.strip(SPACE)
            for prefix in (b"src_ip=", b"dst_ip=", b"src_ip6=", b"dst_ip6=", b"tclass=", b""):
                if len(tok) > len(prefix) and tok.startswith(prefix):
                    break
            else:
                raise _err(errno.EINVAL)
            arg = tok[len(prefix):]
            if prefix in (b"src_ip=", b"dst_ip="):
                addr, rest = cls._ip4(arg)
                bits = 0
                if prefix == b"src_ip=":
                    if rest and rest[:1].isdigit():
                        raise _err(errno.EINVAL)
                    fields[b"src_ip"] = addr
                    continue
                if rest:
                    if rest[:1] != b"/":
                        raise _err(errno.EINVAL)
                    try:
                        bits = kstrtoint(rest[1:])
                    except OSError:
                        raise _err(errno.EINVAL) from None
                    if not 0 <= bits <= 32:
                        raise _err(errno.EINVAL)
                fields[b"dst_ip"] = (addr, bits or 32)
                continue
            if prefix in (b"src_ip6=", b"dst_ip6="):
                fields[prefix[:-1]] = cls._ip6(arg)
                continue
            try:
                v = kstrtoint(arg)
            except OSError:
                raise _err(errno.EINVAL) from None
            if v > 0xFF:
                raise _err(errno.EINVAL)
            tclass = v
        if tclass is None:
            raise _err(errno.EINVAL)
        if (b"src_ip" in fields or b"dst_ip" in fields) and (b"src_ip6" in fields or b"dst_ip6" in fields):
            raise _err(errno.EINVAL)
        return fields, tclass

    @classmethod
    def _print(cls, fields, tclass):
        out = b""
        for k in cls.order:
            if k not in fields:
                continue
            v = fields[k]
            if k == b"src_ip":
                out += b"src_ip=%d.%d.%d.%d," % tuple(v)
            elif k == b"dst_ip":
                out += b"dst_ip=%d.%d.%d.%d/%d," % (tuple(v[0]) + (v[1],))
            else:
                out += k + b"=" + b":".join(b"%02x%02x" % (v[i], v[i + 1]) for i in range(0, 16, 2)) + b","
        return out + b"tclass=%d" % tclass

    @classmethod
    def show(cls, raw):
        if not raw.strip(SPACE):
            return b""
        val, rules = cls._backing(raw)
        out = b"Global tclass=%d\n" % val if val >= 0 else b""
        return out + b"".join(r + b"\n" for r in rules)

    @classmethod
    def store(cls, data, raw):
        fields, tclass = cls._parse(data)
        val, lines = cls._backing(raw)
        rules = [cls._parse(line) for line in lines]
        if not fields:
            val = tclass
        else:
            # tclass_find_match(.., false): the same fields, the same addresses (a dst_ip's
            # address without its mask).
            def key(f):
                return {k: (v[0] if k == b"dst_ip" else v) for k, v in f.items()}

            at = next((i for i, (f, _) in enumerate(rules) if key(f) == key(fields)), None)
            if tclass < 0:
                if at is not None:
                    del rules[at]
            elif at is not None:
                rules[at] = (fields, tclass)
            elif len(rules) >= 40:
                raise _err(errno.ENOMEM)
            else:
                rules.append((fields, tclass))
            rules.sort(key=lambda r: -r[0][b"dst_ip"][1] if b"dst_ip" in r[0] else 1)
        head = b"" if val < 0 else b"%d" % val
        body = b"".join(b"\n" + cls._print(f, t) for f, t in rules)
        return (head + body + b"\n" if head or body else b""), len(data)


class EcnEnable:
    """class/net/IF/ecn/roce_{np,rp}/enable/P, mlnx-ofa_kernel drivers/net/ethernet/mellanox/
    mlx5/core/en_ecn.c. mlx5e_show_ecn_enable prints "%d\\n" of the firmware state.
    mlx5e_store_ecn_enable: sscanf(buf, "%d") (result unchecked); a non-zero value on a
    priority that is already enabled returns EPERM (the query meant for QCN asks the same
    protocol); otherwise mlx5_modify_port_cong_status() writes the 1-bit `enable` field, so
    MLX5_SET keeps the low bit (2 disables). Text that does not convert leaves the kernel's
    int uninitialised: driverfs refuses it with EINVAL."""

    @staticmethod
    def show(raw):
        v = _stored_int(raw)
        return raw if v is None else b"%d\n" % v

    @staticmethod
    def store(data, raw):
        v = sscanf_d(data)
        if v is None:
            raise _err(errno.EINVAL, "sscanf found no number (undefined in the driver)")
        if v and _stored_int(raw) == 1:
            raise _err(errno.EPERM)
        return b"%d\n" % (v & 1), len(data)


class EcnParam:
    """class/net/IF/ecn/roce_np/* and roce_rp/* (the files beside enable/), en_ecn.c: every
    store is sscanf(buf, "%d") (result unchecked) then MLX5_SET into the field of
    cong_control_r_roce_ecn_np / _rp (include/linux/mlx5/mlx5_ifc.h), which keeps as many low
    bits as the field has: cnp_dscp 6, cnp_802p_prio 3, clamp_tgt_rate and
    clamp_tgt_rate_after_time_inc 1, the others (min_time_between_cnps, rpg_*, dce_tcp_*,
    rate_to_set_on_first_cnp, initial_alpha_value, ...) 32. So the firmware never sees an
    out-of-range value: it is truncated, and the store succeeds. show prints "%d\\n".
    Unconvertible text: EINVAL, as for enable."""

    bits = {"cnp_dscp": 6, "cnp_802p_prio": 3, "clamp_tgt_rate": 1, "clamp_tgt_rate_after_time_inc": 1}

    def __init__(self, name):
        self.width = self.bits.get(name, 32)

    show = staticmethod(EcnEnable.show)

    def store(self, data, raw):
        v = sscanf_d(data)
        if v is None:
            raise _err(errno.EINVAL, "sscanf found no number (undefined in the driver)")
        v &= (1 << self.width) - 1
        return b"%d\n" % (s32(v) if self.width == 32 else v), len(data)


class Mtu:
    """class/net/IF/mtu, net/core/net-sysfs.c: netdev_store() parses with kstrtoul(buf, 0)
    (its error, EINVAL or ERANGE, is returned as is) and change_mtu() calls
    dev_set_mtu(dev, (int)new), which dev_validate_mtu() refuses with EINVAL below
    dev->min_mtu or above dev->max_mtu. mlx5e sets min_mtu = ETH_MIN_MTU (68) and
    max_mtu = MLX5E_HW2SW_MTU(port max MTU) = 10000 - (ETH_HLEN + VLAN_HLEN + ETH_FCS_LEN)
    = 9978 (en_main.c / en_rep.c). netdev_show prints "%d\\n"."""

    low, high = 68, 9978
    show = staticmethod(EcnEnable.show)

    @classmethod
    def store(cls, data, raw):
        v = s32(kstrtoull(cstr(data)))
        if v < cls.low or v > cls.high:
            raise _err(errno.EINVAL, "MTU %d outside %d..%d" % (v, cls.low, cls.high))
        return b"%d\n" % v, len(data)


class CmRoceMode:
    """rdma_cm/DEV/ports/N/default_roce_mode, drivers/infiniband/core/cma_configfs.c.
    default_roce_mode_show prints ib_cache_gid_type_str() and "\\n"; the store takes
    ib_cache_gid_parse_type_str(buf) (core/cache.c): the whole string, one trailing newline
    allowed, must be "IB/RoCE v1" or "RoCE v2", else EINVAL; on success it returns
    strnlen(buf, count). (cma_set_default_gid_type turns IB into RoCE v1 on a RoCE port;
    both read back as "IB/RoCE v1".) The default is CMA_PREFERRED_ROCE_GID_TYPE,
    IB_GID_TYPE_ROCE_UDP_ENCAP: "RoCE v2" (core/cma.c, cma_add_one)."""

    default = b"RoCE v2"
    names = (b"IB/RoCE v1", b"RoCE v2")

    @classmethod
    def parse(cls, raw):
        v = raw.strip(SPACE)
        return v if v in cls.names else None

    @classmethod
    def show(cls, raw):
        return (cls.parse(raw) or raw.strip(SPACE)) + b"\n"

    @classmethod
    def store(cls, data, raw):
        s = cstr(data)
        v = s[:-1] if s.endswith(b"\n") else s
        if v not in cls.names:
            raise _err(errno.EINVAL)
        return v + b"\n", len(s)


class CmRoceTos:
    """rdma_cm/DEV/ports/N/default_roce_tos, cma_configfs.c: show prints "%u\\n" of the u8;
    the store is kstrtou8(buf, 0, &tos) and returns its error as is (EINVAL for text, ERANGE
    above 255), else strnlen(buf, count). Default 0 (cma_add_one)."""

    default = b"0"

    @staticmethod
    def parse(raw):
        v = _stored_int(raw)
        return b"%d" % v if v is not None and 0 <= v <= 255 else None

    @classmethod
    def show(cls, raw):
        return (cls.parse(raw) or raw.strip(SPACE)) + b"\n"

    @staticmethod
    def store(data, raw):
        s = cstr(data)
        return b"%d\n" % kstrtou8(s), len(s)


class GidEntry:
    """class/infiniband/DEV/ports/N/gids/M, drivers/infiniband/core/sysfs.c show_port_gid: the
    GID as "%pI6\\n" (eight groups of four hex digits); an entry that rdma_get_gid_attr() does
    not find valid (unused, or reserved) prints the zero GID, "to avoid user space throwing
    such error". No store: the attribute is 0444 and kernfs refuses to open it for writing
    (EACCES)."""

    zero = b"0000:0000:0000:0000:0000:0000:0000:0000\n"
    store = None

    @classmethod
    def show(cls, raw):
        return raw if raw.strip(SPACE) else cls.zero


class GidAttr:
    """ports/N/gid_attrs/types/M and ndevs/M, core/sysfs.c _show_port_gid_attr: an entry that is
    not valid returns -EINVAL ("for user space compatibility reasons"); print_gid_type prints
    ib_cache_gid_type_str() ("IB/RoCE v1", "RoCE v2") and print_ndev the netdev's name, each
    with a newline. A blank backing file is an unused entry. Read-only, as GidEntry."""

    store = None

    @staticmethod
    def show(raw):
        if not raw.strip(SPACE):
            raise _err(errno.EINVAL)
        return raw


class Link:
    """carrier, operstate and the RDMA port's state and phys_state: the backing's value while the
    link is up, the kernel's down values while it is down (DriverFS.link_down)."""

    store = None  # writing them is not modelled (the kernel's carrier store needs ndo_change_carrier)
    down = {"carrier": b"0\n", "operstate": b"down\n", "state": b"1: DOWN\n", "phys_state": b"3: Disabled\n"}


CM_ATTRS = {"default_roce_mode": (CmRoceMode, "mode"), "default_roce_tos": (CmRoceTos, "tos")}
CM_ROOT = "kernel/config/rdma_cm"

TCLASS_RE = re.compile(r"(?:^|/)infiniband/[^/]+/tc/[0-9]+/traffic_class$")
ECN_ENABLE_RE = re.compile(r"(?:^|/)net/[^/]+/ecn/roce_(?:np|rp)/enable/[0-7]$")
ECN_PARAM_RE = re.compile(r"(?:^|/)net/[^/]+/ecn/roce_(?:np|rp)/(?!enable$)([^/]+)$")
MTU_RE = re.compile(r"(?:^|/)net/[^/]+/mtu$")
GID_RE = re.compile(r"(?:^|/)infiniband/[^/]+/ports/[0-9]+/gids/[0-9]+$")
GID_ATTR_RE = re.compile(r"(?:^|/)infiniband/[^/]+/ports/[0-9]+/gid_attrs/(?:types|ndevs)/[0-9]+$")
NET_LINK_RE = re.compile(r"^class/net/([^/]+)/(carrier|operstate)$")
PORT_LINK_RE = re.compile(r"^class/infiniband/([^/]+)/ports/[0-9]+/(state|phys_state)$")


def attribute(rel):
    """The attribute handler for a path relative to sys/, or None (plain file)."""
    if rel.startswith(CM_ROOT + "/"):
        parts = rel[len(CM_ROOT) + 1:].split("/")
        if len(parts) == 4 and parts[1] == "ports" and parts[3] in CM_ATTRS:
            return CM_ATTRS[parts[3]][0]
        return None
    if TCLASS_RE.search(rel):
        return TrafficClass
    if ECN_ENABLE_RE.search(rel):
        return EcnEnable
    m = ECN_PARAM_RE.search(rel)
    if m:
        return EcnParam(m.group(1))
    if MTU_RE.search(rel):
        return Mtu
    if GID_RE.search(rel):
        return GidEntry
    if GID_ATTR_RE.search(rel):
        return GidAttr
    return None


# ---------------------------------------------------------------------------------------
# The filesystem. Paths from FUSE are absolute within the mount; the backing is reached
# through a directory descriptor opened before the mount covered it.


class DriverFS:
    use_ns = True  # fusepy: times in nanoseconds

    def __init__(self, root, backing_fd, ready_fd=None):
        self.root = root
        self.fd = backing_fd
        self.ready_fd = ready_fd
        self.cma_state = os.path.join(root, ".fake", "cma")
        # Open PCI configuration space files whose opener lacked CAP_SYS_ADMIN (see open).
        self.short_config = set()

    def __call__(self, op, *args):
        return getattr(self, op)(*args)

    # helpers ------------------------------------------------------------------------------

    @staticmethod
    def rel(path):
        return path.lstrip("/") or "."

    def _read(self, rel):
        fd = os.open(rel, os.O_RDONLY | os.O_NOFOLLOW, dir_fd=self.fd)
        try:
            chunks = []
            while True:
                b = os.read(fd, 65536)
                if not b:
                    return b"".join(chunks)
                chunks.append(b)
        finally:
            os.close(fd)

    def _write(self, rel, data):
        fd = os.open(rel, os.O_WRONLY | os.O_TRUNC | os.O_NOFOLLOW, dir_fd=self.fd)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)

    def _listdir(self, rel):
        fd = os.open(rel, os.O_RDONLY | os.O_DIRECTORY, dir_fd=self.fd)
        try:
            return os.listdir(fd)
        finally:
            os.close(fd)

    def _isdir(self, rel):
        try:
            return stat.S_ISDIR(os.stat(rel, dir_fd=self.fd).st_mode)
        except OSError:
            return False

    @staticmethod
    def _cm_parts(rel):
        """Components below kernel/config/rdma_cm ([] for the folder itself), or None."""
        if rel == CM_ROOT:
            return []
        if rel.startswith(CM_ROOT + "/"):
            return rel[len(CM_ROOT) + 1:].split("/")
        return None

    def _rmtree_at(self, dir_fd, name):
        fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=dir_fd)
        try:
            for entry in os.listdir(fd):
                if stat.S_ISDIR(os.stat(entry, dir_fd=fd, follow_symlinks=False).st_mode):
                    self._rmtree_at(fd, entry)
                else:
                    os.unlink(entry, dir_fd=fd)
        finally:
            os.close(fd)
        os.rmdir(name, dir_fd=dir_fd)

    # rdma_cm: the kernel's per-port values while the device folder does not exist ----------

    def _cm_saved(self, dev, port, key):
        try:
            with open(os.path.join(self.cma_state, dev, port, key), "rb") as f:
                return f.read()
        except OSError:
            return b""

    def _cm_save(self, dev, port, key, value, default):
        """Keeps VALUE for the next mkdir. A default value is kept as no file, so a folder
        made and removed without a change (cma_roce_mode reading) leaves nothing behind."""
        d = os.path.join(self.cma_state, dev, port)
        f = os.path.join(d, key)
        if value == default:
            try:
                os.unlink(f)
            except FileNotFoundError:
                return
            for empty in (d, os.path.dirname(d), self.cma_state):
                try:
                    os.rmdir(empty)
                except OSError:
                    break
        elif self._cm_saved(dev, port, key) != value + b"\n":
            os.makedirs(d, exist_ok=True)
            with open(f, "wb") as out:
                out.write(value + b"\n")

    def _cm_ports(self, dev):
        try:
            ports = sorted((p for p in self._listdir("class/infiniband/%s/ports" % dev) if p.isdigit()), key=int)
        except OSError:
            ports = []
        return ports or ["1"]

    def _cm_device_gone(self, dev):
        # cma_configfs_params_get: the cma device is looked up by name at every access.
        if not self._isdir("class/infiniband/" + dev):
            raise _err(errno.ENODEV)

    # lifecycle ----------------------------------------------------------------------------

    def init(self, path):
        if self.ready_fd is not None:
            os.write(self.ready_fd, b"ready\n")  # kept open: it closes when the daemon exits

    def destroy(self, path):
        pass

    # metadata -----------------------------------------------------------------------------

    def getattr(self, path, fh=None):
        if path is None:
            st = os.fstat(fh.fh)
            rel = None
        else:
            rel = self.rel(path)
            st = os.stat(rel, dir_fd=self.fd, follow_symlinks=False)
        attrs = {k: getattr(st, k) for k in ("st_mode", "st_ino", "st_nlink", "st_uid", "st_gid", "st_size", "st_rdev", "st_blocks")}
        attrs.update(st_atime=st.st_atime_ns, st_mtime=st.st_mtime_ns, st_ctime=st.st_ctime_ns)
        if rel is not None and stat.S_ISREG(st.st_mode) and (
                attribute(rel) is not None or NET_LINK_RE.match(rel) or PORT_LINK_RE.match(rel)):
            attrs["st_size"] = ATTR_SIZE
        return attrs

    def readlink(self, path):
        return os.readlink(self.rel(path), dir_fd=self.fd)

    def opendir(self, path):
        return 0

    def readdir(self, path, fh):
        return [".", ".."] + self._listdir(self.rel(path))

    def releasedir(self, path, fh):
        return 0

    def statfs(self, path):
        sv = os.statvfs(self.fd)
        return {k: getattr(sv, k) for k in ("f_bsize", "f_frsize", "f_blocks", "f_bfree", "f_bavail", "f_files", "f_ffree", "f_favail", "f_flag", "f_namemax")}

    def chmod(self, path, mode):
        os.chmod(self.rel(path), mode, dir_fd=self.fd)

    def chown(self, path, uid, gid):
        os.chown(self.rel(path), uid, gid, dir_fd=self.fd, follow_symlinks=False)

    def utimens(self, path, times=None):
        rel = self.rel(path)
        if times is None:
            os.utime(rel, dir_fd=self.fd, follow_symlinks=False)
            return
        # libfuse 2 passes UTIME_NOW / UTIME_OMIT as tv_sec 0 with that tv_nsec.
        now, omit = (1 << 30) - 1, (1 << 30) - 2
        st = os.stat(rel, dir_fd=self.fd, follow_symlinks=False)
        t = [time.time_ns() if v == now else v for v in times]
        t = [cur if v == omit else v for v, cur in zip(t, (st.st_atime_ns, st.st_mtime_ns))]
        os.utime(rel, ns=tuple(t), dir_fd=self.fd, follow_symlinks=False)

    # namespace ----------------------------------------------------------------------------

    def mkdir(self, path, mode):
        rel = self.rel(path)
        parts = self._cm_parts(rel)
        if parts is None:
            os.mkdir(rel, mode, dir_fd=self.fd)
            return
        # configfs_mkdir: only the subsystem's make_group (make_cma_dev) creates folders.
        if len(parts) != 1:
            raise _err(errno.EPERM)
        dev = parts[0]
        if not self._isdir("class/infiniband/" + dev):
            raise _err(errno.ENODEV)  # cma_enum_devices_by_ibdev found no device
        os.mkdir(rel, mode, dir_fd=self.fd)
        os.mkdir(rel + "/ports", 0o755, dir_fd=self.fd)
        for port in self._cm_ports(dev):  # make_cma_ports: one group per physical port
            d = "%s/ports/%s" % (rel, port)
            os.mkdir(d, 0o755, dir_fd=self.fd)
            for name, (attr, key) in CM_ATTRS.items():
                value = attr.parse(self._cm_saved(dev, port, key)) or attr.default
                fd = os.open(d + "/" + name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644, dir_fd=self.fd)
                try:
                    os.write(fd, value + b"\n")
                finally:
                    os.close(fd)

    def rmdir(self, path):
        rel = self.rel(path)
        parts = self._cm_parts(rel)
        if parts is None:
            os.rmdir(rel, dir_fd=self.fd)
            return
        # configfs_rmdir: default groups (ports, ports/N) and the subsystem cannot go;
        # drop_cma_dev removes the device folder with its default groups.
        if len(parts) != 1:
            raise _err(errno.EPERM)
        if not self._isdir(rel):
            os.rmdir(rel, dir_fd=self.fd)  # the right error (ENOENT, ENOTDIR)
        dev = parts[0]
        ports = self._listdir(rel + "/ports") if self._isdir(rel + "/ports") else []
        for port in ports:
            for name, (attr, key) in CM_ATTRS.items():
                try:
                    value = attr.parse(self._read("%s/ports/%s/%s" % (rel, port, name)))
                except OSError:
                    value = None
                if value is not None:
                    self._cm_save(dev, port, key, value, attr.default)
        self._rmtree_at(self.fd, rel)

    def unlink(self, path):
        rel = self.rel(path)
        if self._cm_parts(rel) is not None:
            raise _err(errno.EPERM)  # configfs_unlink removes symlinks only
        os.unlink(rel, dir_fd=self.fd)

    def symlink(self, target, source):
        rel = self.rel(target)
        if self._cm_parts(rel) is not None:
            raise _err(errno.EPERM)  # configfs_symlink: no allow_link in cma's item types
        os.symlink(source, rel, dir_fd=self.fd)

    def link(self, target, source):
        new, old = self.rel(target), self.rel(source)
        if self._cm_parts(new) is not None or self._cm_parts(old) is not None:
            raise _err(errno.EPERM)
        os.link(old, new, src_dir_fd=self.fd, dst_dir_fd=self.fd, follow_symlinks=False)

    def rename(self, old, new):
        a, b = self.rel(old), self.rel(new)
        if self._cm_parts(a) is not None or self._cm_parts(b) is not None:
            raise _err(errno.EPERM)  # configfs has no rename
        os.rename(a, b, src_dir_fd=self.fd, dst_dir_fd=self.fd)

    def mknod(self, path, mode, dev):
        rel = self.rel(path)
        if self._cm_parts(rel) is not None:
            raise _err(errno.EPERM)
        os.mknod(rel, mode, dev, dir_fd=self.fd)

    # files --------------------------------------------------------------------------------

    def create(self, path, mode, fi):
        rel = self.rel(path)
        if self._cm_parts(rel) is not None:
            raise _err(errno.EACCES)  # configfs directories have no ->create
        fi.fh = os.open(rel, (fi.flags & ~os.O_NOFOLLOW) | os.O_CREAT, mode, dir_fd=self.fd)
        fi.direct_io = 1
        return 0

    def open(self, path, fi):
        rel = self.rel(path)
        flags = fi.flags
        attr = attribute(rel)
        if attr is not None:
            if getattr(attr, "store", None) is None and flags & os.O_ACCMODE != os.O_RDONLY:
                raise _err(errno.EACCES)  # kernfs_fop_open: no write op
            flags &= ~(os.O_TRUNC | os.O_APPEND)
        fi.fh = os.open(rel, flags, dir_fd=self.fd)
        fi.direct_io = 1
        # PCI configuration space: past its first 64 bytes the kernel answers only an opener with
        # CAP_SYS_ADMIN (pci-sysfs.c pci_read_config: file_ns_capable(filp, ..., CAP_SYS_ADMIN),
        # the capabilities of the file's opener), as a service without it sees.
        if CONFIG_RE.match(rel) and not caller_has_cap(CAP_SYS_ADMIN):
            self.short_config.add(fi.fh)
        return 0

    # the link and a wedged firmware ----------------------------------------------------------

    def _fake(self, *parts):
        try:
            with open(os.path.join(self.root, ".fake", *parts), "rb") as f:
                return f.read().strip().decode("utf-8", "replace")
        except OSError:
            return None

    def link_down(self, ifc):
        """True while IF's link is down after its last toggle (the flap log's mtime)."""
        try:
            toggled = os.stat(os.path.join(self.root, ".fake", "dcb", ifc, "flaps")).st_mtime
        except OSError:
            return False
        seconds = self._fake("net", ifc, "flap_seconds") or "1"
        if seconds == "never":
            return True
        try:
            return time.time() < toggled + float(seconds)
        except ValueError:
            return False

    def _netdev_of(self, dev):
        """The netdev of RDMA device DEV: the one of its PCI function (no symlink followed
        through the mount: the device link is resolved by hand)."""
        try:
            target = os.readlink("class/infiniband/%s/device" % dev, dir_fd=self.fd)
            pci = os.path.normpath(os.path.join("class/infiniband", dev, target))
            names = self._listdir(pci + "/net")
        except OSError:
            return None
        return names[0] if names else None

    def _link_show(self, rel):
        """The value of a link file, or None for a file that is not one."""
        m = NET_LINK_RE.match(rel)
        ifc = m.group(1) if m else None
        if not m:
            m = PORT_LINK_RE.match(rel)
            if not m:
                return None
            ifc = self._netdev_of(m.group(1))
        if ifc is not None and self.link_down(ifc):
            return Link.down[m.group(2)]
        return self._read(rel)

    def _wedge(self, rel):
        """Holds the request as a firmware command that does not complete, when REL is listed:
        for wedged_seconds, or until the daemon is asked to stop (libfuse's loop joins its
        worker threads before it exits, so a held request would hold the unmount too)."""
        listed = self._fake("wedged")
        if not listed or rel not in listed.split("\n"):
            return
        try:
            seconds = float(self._fake("wedged_seconds") or 600)
        except ValueError:
            seconds = 600.0
        end = time.monotonic() + seconds
        while time.monotonic() < end and not session_exited():
            time.sleep(0.1)
        if time.monotonic() < end:
            raise _err(errno.EIO, "driverfs stopped while the command was held")

    def _gid_dropped(self, rel):
        """True for a GID entry of an address that the interface's manager removed while its link
        is down (ROOT/.fake/net/IF/carrier_loss_drops_addresses, systemd-networkd's default, as
        the ip stand-in shows it): the kernel then deletes the address's GIDs (roce_gid_mgmt.c),
        so the entry reads as unused. The link-local GIDs stay."""
        m = re.match(r"^(class/infiniband/[^/]+/ports/[0-9]+)/(?:gids|gid_attrs/types|gid_attrs/ndevs)/([0-9]+)$", rel)
        if not m:
            return False
        try:
            ndev = self._read("%s/gid_attrs/ndevs/%s" % m.groups()).strip().decode()
            gid = self._read("%s/gids/%s" % m.groups()).strip()
        except (OSError, UnicodeDecodeError):
            return False
        if not ndev or not gid or gid.lower().startswith(b"fe80"):
            return False
        marker = os.path.join(self.root, ".fake", "net", ndev, "carrier_loss_drops_addresses")
        return os.path.exists(marker) and self.link_down(ndev)

    def read(self, path, size, offset, fi):
        if path is not None:
            rel = self.rel(path)
            self._wedge(rel)
            link = self._link_show(rel)
            if link is not None:
                return link[offset:offset + size]
            if self._gid_dropped(rel):
                data = GidAttr.show(b"") if "/gid_attrs/" in rel else GidEntry.show(b"")
                return data[offset:offset + size]
        attr = attribute(self.rel(path)) if path is not None else None
        if attr is None:
            if fi.fh in self.short_config:
                # pci_read_config: size 64, reads past it end there.
                size = max(0, min(size, 64 - offset))
            return os.pread(fi.fh, size, offset)
        rel = self.rel(path)
        if attr in (CmRoceMode, CmRoceTos):
            self._cm_device_gone(rel[len(CM_ROOT) + 1:].split("/")[0])
        data = attr.show(self._read(rel))
        return data[offset:offset + size]

    def write(self, path, data, offset, fi):
        if path is not None:
            self._wedge(self.rel(path))
        attr = attribute(self.rel(path)) if path is not None else None
        if attr is None:
            return os.pwrite(fi.fh, data, offset)
        rel = self.rel(path)
        if attr in (CmRoceMode, CmRoceTos):
            self._cm_device_gone(rel[len(CM_ROOT) + 1:].split("/")[0])
        new, count = attr.store(data, self._read(rel))
        self._write(rel, new)
        return count

    def truncate(self, path, length, fh=None):
        if path is not None and attribute(self.rel(path)) is not None:
            return 0  # sysfs and configfs ignore O_TRUNC and truncate(2)
        if fh is not None:
            os.ftruncate(fh.fh, length)
            return 0
        fd = os.open(self.rel(path), os.O_WRONLY, dir_fd=self.fd)
        try:
            os.ftruncate(fd, length)
        finally:
            os.close(fd)
        return 0

    def flush(self, path, fi):
        return 0

    def fsync(self, path, datasync, fi):
        if datasync:
            os.fdatasync(fi.fh)
        else:
            os.fsync(fi.fh)
        return 0

    def release(self, path, fi):
        self.short_config.discard(fi.fh)
        os.close(fi.fh)
        return 0


# A PCI function's configuration space file (devices/pciDDDD:BB/.../DDDD:BB:dd.f/config).
CONFIG_RE = re.compile(r"^devices/pci[0-9a-f]{4}:[0-9a-f]{2}/(?:[^/]+/)*[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]/config$")
CAP_SYS_ADMIN = 21


def caller_has_cap(cap):
    """Whether the process of the current request (fuse_get_context's pid, per thread) has CAP in
    its effective set (/proc/PID/status CapEff). A pid the daemon cannot see (0, or gone) counts
    as privileged: the test's own runs are root with every capability."""
    try:
        import fusepy
        pid = fusepy.fuse_get_context()[2]
        if not pid:
            return True
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("CapEff:"):
                    return bool(int(line.split()[1], 16) >> cap & 1)
    except (ImportError, AttributeError, OSError, ValueError):
        return True
    return True


def session_exited():
    """True once libfuse's session was told to exit (SIGTERM, SIGINT, SIGHUP, an unmount), asked
    from a request's thread (fuse_get_context is per thread)."""
    try:
        import fusepy
        lib = fusepy._libfuse
        lib.fuse_get_session.restype = ctypes.c_void_p
        lib.fuse_get_session.argtypes = [ctypes.c_void_p]
        lib.fuse_session_exited.argtypes = [ctypes.c_void_p]
        fuse = lib.fuse_get_context().contents.fuse
        return bool(fuse) and lib.fuse_session_exited(lib.fuse_get_session(fuse)) != 0
    except (ImportError, AttributeError, OSError, ValueError):
        return False


def die(msg):
    sys.stderr.write("driverfs: %s\n" % msg)
    sys.exit(2)


def main(argv):
    ready_fd = None
    args = argv[1:]
    if args[:1] == ["--ready-fd"] and len(args) >= 2:
        ready_fd = int(args[1])
        args = args[2:]
    if len(args) != 1:
        die("usage: driverfs.py [--ready-fd N] ROOT  (mounts on ROOT/sys)")
    root = os.path.abspath(args[0])
    mnt = os.path.join(root, "sys")

    # Die with the shell that started us: never outlive the run.
    parent = os.getppid()
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGTERM), 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent:
        sys.exit(1)

    os.environ.setdefault("FUSE_LIBRARY_PATH", "libfuse.so.2")  # skip ctypes' ldconfig search
    try:
        import fusepy
    except (ImportError, OSError) as e:
        die("cannot load the FUSE binding fusepy (Debian package python3-fusepy, libfuse2): %s" % e)
    import logging

    logging.basicConfig(level=logging.ERROR, format="driverfs: %(message)s")
    if not os.path.exists("/dev/fuse"):
        die("/dev/fuse is missing: this kernel or container has no FUSE")
    try:
        backing = os.open(mnt, os.O_RDONLY | os.O_DIRECTORY)
    except OSError as e:
        die("cannot open %s: %s" % (mnt, e.strerror))
    os.chdir("/")
    try:
        # Multithreaded: a wedged file holds one request, not the whole file system.
        fusepy.FUSE(DriverFS(root, backing, ready_fd), mnt, foreground=True, nothreads=False, raw_fi=True,
                    fsname="driverfs", subtype="driverfs", nonempty=True, allow_other=True,
                    default_permissions=True, use_ino=True, hard_remove=True)
    except RuntimeError as e:
        die("mounting on %s failed (libfuse status %s; its message is above)" % (mnt, e))
    sys.stderr.flush()
    os._exit(0)  # unmounted: skip the interpreter's teardown


if __name__ == "__main__":
    sys.exit(main(sys.argv))
