"""Writes a synthetic AID plan workbook: N hosts x 8 RoCE ports, one subnet per rail.

usage: make_plan.py HOSTS OUT.xlsx
"""
import sys

from openpyxl import Workbook


def main() -> None:
    hosts, out = int(sys.argv[1]), sys.argv[2]
    wb = Workbook(write_only=True)
    cluster = wb.create_sheet("Cluster")
    for row in [("key", "value"), ("cluster_name", "bench"), ("mtu", 4200), ("min_ofed_version", "24.10")]:
        cluster.append(row)
    servers = wb.create_sheet("Servers")
    servers.append(("hostname", "mgmt_ip", "group"))
    nics = wb.create_sheet("NICs")
    nics.append(("hostname", "ib_dev", "netdev", "ip", "gateway", "rail", "pci", "mac", "switch", "switch_port"))
    for h in range(hosts):
        name = f"gpu-{h:05d}"
        servers.append((name, f"172.16.{h // 250}.{h % 250 + 1}", f"pod-{h // 512}"))
        for r in range(8):
            nics.append((
                name, f"mlx5_{r}", f"ens{r + 1}f0np0",
                f"10.{100 + r}.{h // 250}.{h % 250 + 1}/16", f"10.{100 + r}.255.254", r,
                f"0000:{0x1a + r:02x}:00.0", f"b8:3f:{h >> 8 & 255:02x}:{h & 255:02x}:{r:02x}:00",
                f"leaf-{r + 1}", f"Eth1/{h % 64 + 1}",
            ))
    wb.save(out)


if __name__ == "__main__":
    main()
