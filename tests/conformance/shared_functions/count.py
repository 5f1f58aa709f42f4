"""How many calls flaky.py has logged in this execution (its scratch file)."""
import json
from pathlib import Path


def handler(event, context):
    log = Path(event["scratch"]) / "calls.json"
    return len(json.loads(log.read_text())) if log.exists() else 0
