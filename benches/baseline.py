"""The baseline a user would otherwise write: openpyxl + Jinja2 + tarfile, single-threaded,
producing the same bundle files from roce-gen's own templates (shell values quoted with
shlex.quote). It does not validate the plan beyond what it needs to run.

usage: baseline.py PLAN.xlsx TEMPLATES_DIR OUT_DIR
"""
import hashlib
import io
import json
import os
import shlex
import sys
import tarfile

import jinja2
from openpyxl import load_workbook

# The shell sources every bundle carries as they are, and the files rendered from templates.
PLAIN_FILES = [("precheck.sh", 0o755), ("apply.sh", 0o755), ("rollback.sh", 0o755), ("lib.sh", 0o644),
               ("lib-parse.sh", 0o644), ("lib-checks.sh", 0o644), ("lib-probe.sh", 0o644),
               ("lib-settings.sh", 0o644), ("lib-persist.sh", 0o644)]
HOST_FILES = [("plan.sh", 0o644), ("roce-gen.service", 0o644), ("README.txt", 0o644)]


def sheet_rows(ws):
    rows = ws.iter_rows(values_only=True)
    header = [str(h).strip().lower() for h in next(rows)]
    for row in rows:
        if any(v is not None for v in row):
            yield dict(zip(header, row))


def env_for(templates, escape):
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(templates), comment_start_string="{##", comment_end_string="##}",
        trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True, undefined=jinja2.StrictUndefined,
        finalize=escape)
    return env


def sh(v):
    return shlex.quote(v) if isinstance(v, str) else v


def main() -> None:
    plan, templates, out = sys.argv[1], sys.argv[2], sys.argv[3]
    raw = open(plan, "rb").read()
    plan_sha = hashlib.sha256(raw).hexdigest()
    wb = load_workbook(io.BytesIO(raw), read_only=True, data_only=True)
    kv = {str(r["key"]).strip(): r["value"] for r in sheet_rows(wb["Cluster"])}
    hosts = {}
    for r in sheet_rows(wb["Servers"]):
        hosts[r["hostname"]] = {"hostname": r["hostname"], "mgmt_ip": r["mgmt_ip"], "nics": []}
    for r in sheet_rows(wb["NICs"]):
        nic = {"ib_dev": r["ib_dev"], "netdev": r["netdev"], "ip": r["ip"], "mtu": int(kv.get("mtu", 4200)),
               "pci": r.get("pci") or "", "mac": r.get("mac") or ""}
        hosts[r["hostname"]]["nics"].append(nic)
    name = kv["cluster_name"]
    cluster = {"name": name, "trust": "dscp", "roce_dscp": 26, "roce_priority": 3, "roce_tos": 106, "cnp_dscp": 48,
               "cnp_priority": 6, "pfc_vector": "0,0,0,1,0,0,0,0", "ecn_vector": "0,0,0,1,0,0,0,0",
               "roce_mode": "RoCE v2", "global_pause": "off", "persistence": True,
               "dcbx": "check", "min_ofed_version": str(kv.get("min_ofed_version", "")), "min_fw_version": "",
               "cable_length": "", "firmware_config": "report", "nccl_env": True, "dcqcn": []}
    sh_env = env_for(templates, sh)
    unit_env = env_for(templates, lambda v: v.replace("%", "%%").replace("$", "$$") if isinstance(v, str) else v)
    plain_env = env_for(templates, lambda v: v)
    plain = {}
    for fname, mode in PLAIN_FILES:
        with open(os.path.join(templates, "host", fname)) as f:
            plain[fname] = (f.read(), mode)
    os.makedirs(out, exist_ok=True)
    index = []
    for host in hosts.values():
        ctx = {"tool_version": "baseline", "plan_sha256": plan_sha, "cluster": cluster, "host": host,
               "install_dir": f"/opt/roce-gen/{name}"}
        files = dict(plain)
        for fname, mode in HOST_FILES:
            env = sh_env if fname.endswith(".sh") else unit_env if fname.endswith(".service") else plain_env
            files[fname] = (env.get_template(f"host/{fname}.j2").render(**ctx), mode)
        files["host.json"] = (json.dumps({"cluster": cluster, "host": host}, indent=2) + "\n", 0o644)
        manifest = [{"path": p, "size": len(t.encode()), "mode": f"{m:04o}",
                     "sha256": hashlib.sha256(t.encode()).hexdigest()} for p, (t, m) in sorted(files.items())]
        files["manifest.json"] = (json.dumps({"files": manifest}, indent=2) + "\n", 0o644)
        files["SHA256SUMS"] = ("".join(f"{hashlib.sha256(t.encode()).hexdigest()}  {p}\n"
                                       for p, (t, _) in sorted(files.items())), 0o644)
        path = os.path.join(out, f"{host['hostname']}.tar.gz")
        with tarfile.open(path, "w:gz") as tar:
            for fname, (text, mode) in sorted(files.items()):
                data = text.encode()
                info = tarfile.TarInfo(f"{host['hostname']}/{fname}")
                info.size, info.mode = len(data), mode
                tar.addfile(info, io.BytesIO(data))
        index.append({"host": host["hostname"], "sha256": hashlib.sha256(open(path, "rb").read()).hexdigest()})
    with open(os.path.join(out, "index.json"), "w") as f:
        json.dump({"cluster": name, "hosts": index}, f, indent=2)


if __name__ == "__main__":
    main()
