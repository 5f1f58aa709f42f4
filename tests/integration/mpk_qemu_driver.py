"""Runs inside the QEMU guest: each case of a JSON file as a command, one result line each.

``python mpk_qemu_driver.py CASES.json`` prints ``MPKCASE {"name", "code", "stdout",
"stderr"}`` per case (stderr's tail), so the host test can check every case of one boot.
A case with ``"exports": true`` (``examples/local-aws/start``) passes the ``export K=V``
lines it prints to the environment of every later case.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys


def main(cases_file: str) -> int:
    with open(cases_file, encoding="utf-8") as handle:
        cases = json.load(handle)
    exported: dict[str, str] = {}
    for case in cases:
        env = dict(os.environ, **exported, **case.get("env", {}))
        try:
            proc = subprocess.run(case["argv"], capture_output=True, text=True, env=env,
                                  cwd=case.get("cwd"), timeout=case.get("timeout", 600))
            code, out, err = proc.returncode, proc.stdout, proc.stderr
        except subprocess.TimeoutExpired as exc:
            code, out, err = -1, "", f"timed out: {exc}"
        if case.get("exports") and code == 0:
            exported.update(_exports(out))
        print("MPKCASE " + json.dumps({"name": case["name"], "code": code, "stdout": out,
                                       "stderr": err[-4000:]}), flush=True)
    return 0


def _exports(text: str) -> dict[str, str]:
    return dict(line.removeprefix("export ").partition("=")[::2]
                for line in text.splitlines() if line.startswith("export "))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
