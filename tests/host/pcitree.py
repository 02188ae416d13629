#!/usr/bin/env python3
"""pcitree.py: a simulated server's PCI tree, as the Linux kernel lays it out in sysfs.

    pcitree.py ROOT TOPOLOGY [--acs on|off] [--mrrs BYTES] [--iommu-type DMA-FQ|identity]

writes under ROOT/sys the PCI functions of TOPOLOGY (a JSON file, e.g.
fixtures/pci/hgx-8gpu.json, whose README names its source), so that scripts and the real
pciutils (`lspci -A linux-sysfs -O sysfs.path=ROOT/sys/bus/pci`, `setpci` the same way) read the
tree as they read a real host's. The layout follows the kernel and what pciutils 3.9 reads
(lib/sysfs.c):

  sys/devices/pciDDDD:BB/DDDD:BB:dd.f/.../    one folder per function, nested in its bridge's
                                              (drivers/pci/probe.c, pci_setup_device and
                                              device_add under the parent bridge); pciDDDD:BB is
                                              the host bridge of the root bus
    config       the configuration space, 4096 bytes (PCI Express extended space), laid out
                 as include/uapi/linux/pci_regs.h names it: vendor/device, Command, Status with
                 PCI_STATUS_CAP_LIST, revision and class, header type 0 (endpoint) or 1 (bridge,
                 with primary/secondary/subordinate bus numbers covering the buses below it,
                 windows disabled), endpoint BARs and subsystem IDs, Capabilities Pointer 0x34 ->
                 0x40, a PCI Express capability v2 (PCI_CAP_ID_EXP 0x10: Device/Port Type in
                 Flags bits 7:4, DevCap, DevCtl with Max_Payload_Size in bits 7:5 and
                 Max_Read_Request_Size in bits 14:12, LnkCap/LnkCtl/LnkSta speed and width,
                 LnkCap2/LnkCtl2), and on root ports and switch downstream ports an ACS
                 extended capability at 0x100 (PCI_EXT_CAP_ID_ACS 0x000d: ACS Capability at +4,
                 ACS Control at +6)
    vendor device subsystem_vendor subsystem_device class revision irq numa_node local_cpus
    local_cpulist current_link_speed current_link_width max_link_speed max_link_width resource
                 as drivers/pci/pci-sysfs.c prints them ("0x%04x", class "0x%06x", revision
                 "0x%02x", numa_node "%d", local_cpus the "%*pb" mask, local_cpulist "%*pbl",
                 link speeds pci_speed_string's "32.0 GT/s PCIe", widths "%u", resource one
                 "0x%016llx 0x%016llx 0x%016llx" line per resource: 13 for an endpoint, 17 for
                 a bridge, CONFIG_PCI_IOV as distributions build it); bridges also
                 secondary_bus_number and subordinate_bus_number
    driver       -> ../../(...)/bus/pci/drivers/NAME (relative, as sysfs makes it)
    iommu_group  -> ../../(...)/kernel/iommu_groups/N
  sys/bus/pci/devices/DDDD:BB:dd.f -> ../../../devices/...      every function, bridges too
  sys/bus/pci/drivers/NAME/DDDD:BB:dd.f -> ../../../../devices/...
  sys/kernel/iommu_groups/N/type, N/devices/DDDD:BB:dd.f -> ../../../../devices/...

Every function has an IOMMU group of its own (numbered from 0 in address order), as on a host
whose IOMMU is on with ACS (each port and endpoint isolated); its type is DMA-FQ (the kernel's
default DMA domain) or, with --iommu-type identity, identity (iommu=pt).

--acs on (the default): the ACS Control register holds what pci_std_enable_acs
(drivers/pci/pci.c) sets when an IOMMU asks for ACS: the Capability's Source Validation, P2P
Request Redirect, P2P Completion Redirect and Upstream Forwarding bits (Translation Blocking only
for external-facing or untrusted ports, which these are not). --acs off: the register is 0 (no
IOMMU, or cleared with setpci as NVIDIA's GPUDirect guides do); the groups stay the ones the
kernel made at boot.

--mrrs BYTES: the Max_Read_Request_Size of every network controller (class 0x02xxxx; default
512, the PCI Express reset value the kernel keeps unless a driver or pcie_bus_config changes
it). Other functions keep their kind's value.

A function that ROOT already has at one of TOPOLOGY's addresses (ROOT/sys/bus/pci/devices/BDF:
a NIC that `fakehost.sh create --nic` put at ROOT/sys/devices/pci0000:00/BDF) is moved into the
tree, with its SR-IOV virtual functions (the folders beside it whose physfn names it), and every
relative link under ROOT/sys that named something in the moved folders, or that lies in them,
is made again to point at the same thing (class/net/IF/device, class/infiniband/DEV/device,
bus/pci/devices/BDF, bus/pci/drivers/mlx5_core/BDF, the function's own driver, net/ and
infiniband/ links); its other files stay, the PCI attributes above are written over. An emptied
pci0000:00 is removed. The output is the same for the same inputs (no time, no randomness).
"""

import argparse
import json
import os
import struct
import sys

# include/uapi/linux/pci_regs.h
PCI_COMMAND = 0x04
PCI_STATUS = 0x06
PCI_STATUS_CAP_LIST = 0x10
PCI_REVISION_ID = 0x08
PCI_CLASS_PROG = 0x09
PCI_HEADER_TYPE = 0x0E
PCI_BASE_ADDRESS_0 = 0x10
PCI_PRIMARY_BUS = 0x18
PCI_SECONDARY_BUS = 0x19
PCI_SUBORDINATE_BUS = 0x1A
PCI_IO_BASE = 0x1C
PCI_IO_LIMIT = 0x1D
PCI_MEMORY_BASE = 0x20
PCI_MEMORY_LIMIT = 0x22
PCI_PREF_MEMORY_BASE = 0x24
PCI_PREF_MEMORY_LIMIT = 0x26
PCI_SUBSYSTEM_VENDOR_ID = 0x2C
PCI_SUBSYSTEM_ID = 0x2E
PCI_CAPABILITY_LIST = 0x34
PCI_INTERRUPT_PIN = 0x3D
PCI_CAP_ID_EXP = 0x10
PCI_EXP_FLAGS = 0x02
PCI_EXP_DEVCAP = 0x04
PCI_EXP_DEVCAP_RBER = 0x00008000
PCI_EXP_DEVCAP_FLR = 0x10000000
PCI_EXP_DEVCTL = 0x08
PCI_EXP_DEVCTL_RELAX_EN = 0x0010
PCI_EXP_DEVCTL_EXT_TAG = 0x0100
PCI_EXP_DEVCTL_NOSNOOP_EN = 0x0800
PCI_EXP_LNKCAP = 0x0C
PCI_EXP_LNKCAP_DLLLARC = 0x00100000
PCI_EXP_LNKSTA = 0x12
PCI_EXP_LNKSTA_SLC = 0x1000
PCI_EXP_LNKSTA_DLLLA = 0x2000
PCI_EXP_LNKCAP2 = 0x2C
PCI_EXP_LNKCTL2 = 0x30
PCI_EXP_TYPE = {"endpoint": 0x0, "root_port": 0x4, "upstream": 0x5, "downstream": 0x6}
PCI_EXT_CAP_ID_ACS = 0x000D
PCI_ACS_CAP = 0x04
PCI_ACS_CTRL = 0x06
PCI_ACS_SV, PCI_ACS_TB, PCI_ACS_RR, PCI_ACS_CR, PCI_ACS_UF = 0x01, 0x02, 0x04, 0x08, 0x10
EXP_CAP = 0x40  # where each function's PCI Express capability sits (Capabilities Pointer)
ACS_CAP = 0x100  # the first extended capability
CONFIG_SIZE = 4096  # PCI_CFG_SPACE_EXP_SIZE

# The Link Speed encodings (PCI_EXP_LNKCAP_SLS_*) and drivers/pci/probe.c pci_speed_string.
SPEEDS = {"2.5": 1, "5.0": 2, "8.0": 3, "16.0": 4, "32.0": 5, "64.0": 6}
# include/linux/ioport.h: IORESOURCE_MEM, _PREFETCH, _MEM_64, _SIZEALIGN; plus the BAR's own
# low bits (pci_parse_bar keeps them in the flags).
RES_MEM32 = 0x00040200
RES_MEM64_PREF = 0x0014220C
# drivers/pci/pci-sysfs.c resource_show: PCI_BRIDGE_RESOURCES lines for an endpoint, and
# PCI_NUM_RESOURCES for a bridge (6 BARs, ROM, 6 IOV BARs, 4 bridge windows).
RES_LINES_ENDPOINT, RES_LINES_BRIDGE = 13, 17


def die(msg):
    sys.stderr.write("pcitree: %s\n" % msg)
    sys.exit(2)


def hexnum(text, what):
    try:
        return int(str(text), 0)
    except ValueError:
        die("%s: %r is not a number" % (what, text))


def parse_bdf(bdf):
    """DDDD:BB:dd.f -> (domain, bus, device, function)."""
    try:
        dom, bus, rest = bdf.split(":")
        dev, fn = rest.split(".")
        out = int(dom, 16), int(bus, 16), int(dev, 16), int(fn, 16)
    except ValueError:
        die("bad PCI address %r (want DDDD:BB:dd.f)" % bdf)
    if bdf != bdf.lower() or len(dom) != 4 or len(bus) != 2 or len(dev) != 2 or len(fn) != 1 \
            or out[2] > 31 or out[3] > 7:
        die("bad PCI address %r (want DDDD:BB:dd.f, lower case)" % bdf)
    return out


def size_bytes(text):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    text = str(text)
    if text[-1:] in units:
        return int(text[:-1]) * units[text[-1]]
    return int(text, 0)


def cpumask(cpulist, ncpus):
    """A cpulist ("0-23,96-119") as the kernel's %*pb prints the mask: 32-bit hex words,
    most significant first, comma-separated, as many words as the host has CPUs for."""
    bits = 0
    for part in cpulist.split(","):
        lo, _, hi = part.partition("-")
        for c in range(int(lo), int(hi or lo) + 1):
            bits |= 1 << c
    words = (ncpus + 31) // 32
    return ",".join("%08x" % ((bits >> (32 * i)) & 0xFFFFFFFF) for i in reversed(range(words)))


class Tree:
    def __init__(self, topo, args):
        self.topo = topo
        self.args = args
        self.kinds = topo.get("kinds") or die("the topology has no kinds")
        self.ncpus = int(topo.get("cpus", 0)) or die("the topology does not say how many CPUs")
        self.numa = topo.get("numa_nodes") or die("the topology has no numa_nodes")
        self.funcs = []  # each: dict(bdf, kind, path (relative to sys/), numa, parent, children)
        seen = set()
        for rc in topo.get("root_complexes") or die("the topology has no root_complexes"):
            dom, bus = rc["bus"].split(":")
            host = "pci%s:%s" % (dom, bus)
            numa = str(rc["numa_node"])
            if numa not in self.numa:
                die("%s: NUMA node %s is not in numa_nodes" % (host, numa))
            for node in rc["functions"]:
                self._add(node, "devices/" + host, None, (int(dom, 16), int(bus, 16)), numa, seen)
        self._bus_numbers()

    def _add(self, node, parent_path, parent, bus, numa, seen):
        bdf = node.get("bdf") or die("a function without bdf")
        d, b, _, _ = parse_bdf(bdf)
        if bdf in seen:
            die("%s appears twice" % bdf)
        seen.add(bdf)
        if (d, b) != bus:
            want = "%04x:%02x" % bus
            die("%s is on bus %s, but its parent's secondary bus is %s" % (bdf, bdf[:7], want))
        kind = self.kinds.get(node.get("kind")) or die("%s: unknown kind %r" % (bdf, node.get("kind")))
        port = kind.get("port")
        if port not in PCI_EXP_TYPE:
            die("kind %s: port must be one of %s" % (node["kind"], ", ".join(PCI_EXP_TYPE)))
        f = {"bdf": bdf, "kind": node["kind"], "k": kind, "path": parent_path + "/" + bdf,
             "numa": numa, "parent": parent, "children": [], "dev": parse_bdf(bdf)}
        self.funcs.append(f)
        if parent is not None:
            parent["children"].append(f)
        children = node.get("children", [])
        if port == "endpoint" and children:
            die("%s is an endpoint, yet has children" % bdf)
        if port != "endpoint" and not children:
            die("%s is a bridge with nothing below it" % bdf)
        if children:
            sec = parse_bdf(children[0].get("bdf", ""))[:2]
            if sec[1] <= b:
                die("%s: the bus below (%02x) must be above its own (%02x)" % (bdf, sec[1], b))
            for c in children:
                self._add(c, f["path"], f, sec, numa, seen)

    def _bus_numbers(self):
        """Each bridge's secondary bus (its children's) and subordinate bus (the highest below
        it), and no two bridges claiming the same bus."""
        def sub(f):
            return max([f["dev"][1]] + [sub(c) for c in f["children"]])
        owner = {}
        for f in self.funcs:
            if f["children"]:
                f["secondary"] = f["children"][0]["dev"][1]
                f["subordinate"] = sub(f)
                key = (f["dev"][0], f["secondary"])
                if key in owner:
                    die("%s and %s both lead to bus %02x" % (owner[key], f["bdf"], f["secondary"]))
                owner[key] = f["bdf"]

    # -- contents --------------------------------------------------------------------------

    def bars(self, f, index):
        """(BAR index, start, size, flags) of an endpoint: 32-bit BARs from 0x90000000 and 64-bit
        ones from 0x200000000000, a window of their own per endpoint, each BAR aligned to its
        size."""
        out = []
        low = 0x90000000 + index * 0x04000000
        high = 0x200000000000 + index * 0x4000000000
        for bar in f["k"].get("bars", []):
            size = size_bytes(bar["size"])
            if bar["type"] == "mem32":
                low = (low + size - 1) // size * size
                out.append((bar["index"], low, size, RES_MEM32))
                low += size
            elif bar["type"] == "mem64pref":
                high = (high + size - 1) // size * size
                out.append((bar["index"], high, size, RES_MEM64_PREF))
                high += size
            else:
                die("kind %s: BAR type must be mem32 or mem64pref" % f["kind"])
        return out

    def mrrs(self, f):
        k = f["k"]
        value = k.get("max_read_request", 512)
        if (hexnum(k["class"], "class") >> 16) == 0x02 and self.args.mrrs is not None:
            value = self.args.mrrs
        return value

    def config(self, f, bars):
        k = f["k"]
        c = bytearray(CONFIG_SIZE)
        bridge = bool(f["children"])
        cls = hexnum(k["class"], "class")
        struct.pack_into("<HH", c, 0, hexnum(k["vendor"], "vendor"), hexnum(k["device"], "device"))
        struct.pack_into("<HH", c, PCI_COMMAND, hexnum(k.get("command", "0x0006"), "command"), PCI_STATUS_CAP_LIST)
        c[PCI_REVISION_ID] = hexnum(k["revision"], "revision")
        c[PCI_CLASS_PROG:PCI_CLASS_PROG + 3] = bytes([cls & 0xFF, (cls >> 8) & 0xFF, cls >> 16])
        c[PCI_HEADER_TYPE] = 1 if bridge else 0
        if bridge:
            c[PCI_PRIMARY_BUS] = f["dev"][1]
            c[PCI_SECONDARY_BUS] = f["secondary"]
            c[PCI_SUBORDINATE_BUS] = f["subordinate"]
            # Windows disabled: base above limit (pci_read_bridge_windows reads them so).
            c[PCI_IO_BASE], c[PCI_IO_LIMIT] = 0xF0, 0x00
            struct.pack_into("<HH", c, PCI_MEMORY_BASE, 0xFFF0, 0x0000)
            struct.pack_into("<HH", c, PCI_PREF_MEMORY_BASE, 0xFFF1, 0x0001)
        else:
            for index, start, _, flags in bars:
                where = PCI_BASE_ADDRESS_0 + 4 * index
                if flags == RES_MEM64_PREF:
                    struct.pack_into("<II", c, where, (start & 0xFFFFFFFF) | 0xC, start >> 32)
                else:
                    struct.pack_into("<I", c, where, start)
            struct.pack_into("<HH", c, PCI_SUBSYSTEM_VENDOR_ID, hexnum(k["subsystem_vendor"], "subsystem_vendor"),
                             hexnum(k["subsystem_device"], "subsystem_device"))
            c[PCI_INTERRUPT_PIN] = 1  # INTA#, which every one of these functions declares
        c[PCI_CAPABILITY_LIST] = EXP_CAP
        self.express(c, f)
        if k.get("acs_cap") is not None:
            acs_cap = hexnum(k["acs_cap"], "acs_cap")
            ctrl = 0
            if self.args.acs == "on":
                ctrl = acs_cap & (PCI_ACS_SV | PCI_ACS_RR | PCI_ACS_CR | PCI_ACS_UF)
            # Header: ID, version 1, no next capability.
            struct.pack_into("<IHH", c, ACS_CAP, PCI_EXT_CAP_ID_ACS | (1 << 16), acs_cap, ctrl)
        return bytes(c)

    def express(self, c, f):
        k = f["k"]
        port = k["port"]
        speed = SPEEDS.get(str(k["link_speed"]).split()[0]) or die("kind %s: bad link_speed" % f["kind"])
        width = int(k["link_width"])
        payload = {128: 0, 256: 1, 512: 2, 1024: 3, 2048: 4, 4096: 5}
        mps_cap = payload.get(int(k.get("max_payload_cap", 512)))
        mps = payload.get(int(k.get("max_payload", 256)))
        mrrs = payload.get(int(self.mrrs(f)))
        if mps_cap is None or mps is None or mrrs is None:
            die("%s: payload and read request sizes must be 128, 256, ..., 4096 bytes" % f["bdf"])
        c[EXP_CAP] = PCI_CAP_ID_EXP
        c[EXP_CAP + 1] = 0  # no next capability
        struct.pack_into("<H", c, EXP_CAP + PCI_EXP_FLAGS, 2 | (PCI_EXP_TYPE[port] << 4))
        devcap = mps_cap | PCI_EXP_DEVCAP_RBER
        devctl = (mps << 5) | (mrrs << 12) | PCI_EXP_DEVCTL_EXT_TAG
        if port == "endpoint":
            devcap |= PCI_EXP_DEVCAP_FLR
            devctl |= PCI_EXP_DEVCTL_RELAX_EN | PCI_EXP_DEVCTL_NOSNOOP_EN
        struct.pack_into("<I", c, EXP_CAP + PCI_EXP_DEVCAP, devcap)
        struct.pack_into("<H", c, EXP_CAP + PCI_EXP_DEVCTL, devctl)
        lnkcap = speed | (width << 4)
        lnksta = speed | (width << 4)
        if port in ("root_port", "downstream"):
            # A downstream-facing port numbers itself (Port Number, bits 31:24: its device
            # number here) and reports its Data Link Layer state.
            lnkcap |= (f["dev"][2] << 24) | PCI_EXP_LNKCAP_DLLLARC
            lnksta |= PCI_EXP_LNKSTA_DLLLA
        lnksta |= PCI_EXP_LNKSTA_SLC
        struct.pack_into("<I", c, EXP_CAP + PCI_EXP_LNKCAP, lnkcap)
        struct.pack_into("<H", c, EXP_CAP + PCI_EXP_LNKSTA, lnksta)
        # Supported Link Speeds Vector: every speed up to the link's (bits 1..speed).
        struct.pack_into("<I", c, EXP_CAP + PCI_EXP_LNKCAP2, ((1 << speed) - 1) << 1)
        struct.pack_into("<H", c, EXP_CAP + PCI_EXP_LNKCTL2, speed)

    # -- writing ---------------------------------------------------------------------------

    def write(self, root):
        sysdir = os.path.join(root, "sys")
        drivers = sorted({f["k"]["driver"] for f in self.funcs if f["k"].get("driver")})
        for d in ["bus/pci/devices", "kernel/iommu_groups"] + ["bus/pci/drivers/" + d for d in drivers]:
            os.makedirs(os.path.join(sysdir, d), exist_ok=True)
        endpoints = 0
        for group, f in enumerate(sorted(self.funcs, key=lambda f: f["dev"])):
            k = f["k"]
            here = os.path.join(sysdir, f["path"])
            os.makedirs(here, exist_ok=True)
            up = "../" * f["path"].count("/") + "../"  # from the function's folder to sys/
            bars = []
            if not f["children"]:
                bars = self.bars(f, endpoints)
                endpoints += 1
            put(here, "config", self.config(f, bars))
            speed = str(k["link_speed"]).split()[0] + " GT/s PCIe"
            attrs = {
                "vendor": "0x%04x" % hexnum(k["vendor"], "vendor"),
                "device": "0x%04x" % hexnum(k["device"], "device"),
                "subsystem_vendor": "0x%04x" % hexnum(k["subsystem_vendor"], "subsystem_vendor"),
                "subsystem_device": "0x%04x" % hexnum(k["subsystem_device"], "subsystem_device"),
                "class": "0x%06x" % hexnum(k["class"], "class"),
                "revision": "0x%02x" % hexnum(k["revision"], "revision"),
                "irq": "0",
                "numa_node": f["numa"],
                "local_cpulist": self.numa[f["numa"]],
                "local_cpus": cpumask(self.numa[f["numa"]], self.ncpus),
                "current_link_speed": speed,
                "max_link_speed": speed,
                "current_link_width": str(int(k["link_width"])),
                "max_link_width": str(int(k["link_width"])),
            }
            res = [(0, 0, 0)] * (RES_LINES_BRIDGE if f["children"] else RES_LINES_ENDPOINT)
            for index, start, size, flags in bars:
                res[index] = (start, start + size - 1, flags)
            attrs["resource"] = "".join("0x%016x 0x%016x 0x%016x\n" % r for r in res).rstrip("\n")
            if f["children"]:
                attrs["secondary_bus_number"] = str(f["secondary"])
                attrs["subordinate_bus_number"] = str(f["subordinate"])
            for name, value in attrs.items():
                put(here, name, (value + "\n").encode())
            if k.get("driver"):
                relink(os.path.join(here, "driver"), up + "bus/pci/drivers/" + k["driver"])
                relink(os.path.join(sysdir, "bus/pci/drivers", k["driver"], f["bdf"]), "../../../../" + f["path"])
            relink(os.path.join(sysdir, "bus/pci/devices", f["bdf"]), "../../../" + f["path"])
            gdir = os.path.join(sysdir, "kernel/iommu_groups", str(group))
            os.makedirs(os.path.join(gdir, "devices"), exist_ok=True)
            put(gdir, "type", (self.args.iommu_type + "\n").encode())
            relink(os.path.join(gdir, "devices", f["bdf"]), "../../../../" + f["path"])
            relink(os.path.join(here, "iommu_group"), up + "kernel/iommu_groups/%d" % group)


def put(folder, name, data):
    path = os.path.join(folder, name)
    if os.path.islink(path):
        os.unlink(path)
    with open(path, "wb") as out:
        out.write(data)


def relink(path, target):
    if os.path.lexists(path):
        if os.path.islink(path) and os.readlink(path) == target:
            return
        os.unlink(path)
    os.symlink(target, path)


def adopt(root, tree):
    """Moves the functions ROOT already has at TOPOLOGY's addresses (and their VFs) to their
    places in the tree and makes every relative link under ROOT/sys that named them, or that
    lies in them, point at the same thing again. Returns the folders left empty to remove."""
    sysdir = os.path.join(root, "sys")
    moves = {}  # old absolute folder -> new absolute folder
    for f in tree.funcs:
        link = os.path.join(sysdir, "bus/pci/devices", f["bdf"])
        if not os.path.islink(link):
            continue
        old = os.path.normpath(os.path.join(os.path.dirname(link), os.readlink(link)))
        new = os.path.join(sysdir, f["path"])
        if old == new or not os.path.isdir(old):
            continue
        if f["children"]:
            die("%s is a bridge in the topology but ROOT already has it elsewhere" % f["bdf"])
        try:
            with open(os.path.join(old, "vendor")) as v:
                vendor = int(v.read().strip(), 16)
        except (OSError, ValueError):
            vendor = None
        want = hexnum(f["k"]["vendor"], "vendor")
        if vendor is not None and vendor != want:
            die("ROOT's %s is vendor 0x%04x, the topology's %s 0x%04x" % (f["bdf"], vendor, f["kind"], want))
        moves[old] = new
        parent = os.path.dirname(old)
        for name in sorted(os.listdir(parent)):
            vf = os.path.join(parent, name)
            phys = os.path.join(vf, "physfn")
            if os.path.islink(phys) and \
                    os.path.normpath(os.path.join(vf, os.readlink(phys))) == old:
                moves[vf] = os.path.join(os.path.dirname(new), name)
    if not moves:
        return []

    def moved(path):
        for old, new in moves.items():
            if path == old or path.startswith(old + "/"):
                return new + path[len(old):]
        return path

    links = []
    for dirpath, dirnames, filenames in os.walk(sysdir):
        for name in dirnames + filenames:
            p = os.path.join(dirpath, name)
            if os.path.islink(p) and not os.readlink(p).startswith("/"):
                links.append((p, os.path.normpath(os.path.join(dirpath, os.readlink(p)))))
    for old, new in sorted(moves.items()):
        if os.path.lexists(new):
            die("cannot move %s: %s exists" % (old, new))
        os.makedirs(os.path.dirname(new), exist_ok=True)
        os.rename(old, new)
    for path, target in links:
        npath, ntarget = moved(path), moved(target)
        if (npath, ntarget) != (path, target):
            relink(npath, os.path.relpath(ntarget, os.path.dirname(npath)))
    return sorted({os.path.dirname(old) for old in moves})


def main(argv):
    ap = argparse.ArgumentParser(prog="pcitree.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("root")
    ap.add_argument("topology")
    ap.add_argument("--acs", choices=("on", "off"), default="on")
    ap.add_argument("--mrrs", type=int, choices=(128, 256, 512, 1024, 2048, 4096))
    ap.add_argument("--iommu-type", choices=("DMA-FQ", "identity"), default="DMA-FQ")
    args = ap.parse_args(argv[1:])
    if not os.path.isdir(args.root):
        die("%s is not a folder" % args.root)
    try:
        with open(args.topology) as f:
            topo = json.load(f)
    except (OSError, ValueError) as e:
        die("cannot read %s: %s" % (args.topology, e))
    tree = Tree(topo, args)
    root = os.path.abspath(args.root)
    emptied = adopt(root, tree)
    tree.write(root)
    for d in emptied:
        try:
            os.rmdir(d)
        except OSError:
            pass  # still holds functions the topology does not name
    # A function the host has where the topology has none (a NIC made at another address)
    # stays where it is, outside the tree: said, since a test then sees no path to it.
    devices = os.path.join(root, "sys/bus/pci/devices")
    placed = {f["bdf"] for f in tree.funcs}
    for name in sorted(os.listdir(devices)):
        if name not in placed and not os.path.lexists(os.path.join(devices, name, "physfn")):
            sys.stderr.write("pcitree: %s is not in %s; it stays outside the tree\n" % (name, args.topology))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
