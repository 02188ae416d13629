"""Writes N synthetic result files (schema roce-gen/result/v1), as a fleet's apply runs would:
most hosts pass, a few fail a check or run other firmware.

usage: make_results.py N OUT_DIR
"""
import json
import os
import sys


def main() -> None:
    n, out = int(sys.argv[1]), sys.argv[2]
    os.makedirs(out, exist_ok=True)
    for h in range(n):
        host = f"gpu-{h:05d}"
        checks, nics = [], {}
        for r in range(8):
            dev = f"mlx5_{r}"
            planned = {"ib_dev": "present", "netdev": f"ens{r + 1}f0np0", "netdev_map": f"ens{r + 1}f0np0",
                       "link_layer": "Ethernet", "trust": "dscp", "pfc": "0,0,0,1,0,0,0,0", "mtu": "4200",
                       "roce_mode": "RoCE v2"}
            for cid, want in planned.items():
                bad = h % 97 == 0 and cid == "pfc" and r == 3
                checks.append({"id": cid, "nic": dev, "status": "fail" if bad else "pass", "severity": "error",
                               "expected": want, "actual": "0,0,0,0,0,0,0,0" if bad else want,
                               "message": f"{cid} of {dev}" + (" reads back wrong" if bad else " as planned")})
            nics[dev] = {"fw_ver": "28.36.1010" if h % 211 == 0 else "28.39.1002", "netdev": f"ens{r + 1}f0np0"}
        status = "fail" if any(c["status"] == "fail" for c in checks) else "pass"
        counts = {s: sum(c["status"] == s for c in checks) for s in ("pass", "warn", "fail", "skip", "changed")}
        doc = {"schema": "roce-gen/result/v1", "tool_version": "0.1.0", "cluster": "bench", "host": host,
               "observed_hostname": host, "phase": "apply", "dry_run": False, "plan_sha256": "0" * 64,
               "bundle_sha256": "1" * 64, "started_at": "2026-11-30T08:00:00Z", "finished_at": "2026-11-30T08:00:05Z",
               "status": status, "counts": counts, "checks": checks,
               "facts": {"kernel": "5.14.0-427.el9_4.x86_64", "ofed": "MLNX_OFED_LINUX-24.10-1.1.4.0", "nics": nics}}
        with open(os.path.join(out, f"{host}.apply.json"), "w") as f:
            json.dump(doc, f)


if __name__ == "__main__":
    main()
