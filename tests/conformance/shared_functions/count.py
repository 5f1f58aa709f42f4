"""How many calls flaky.py has logged in this execution (the harness's call log)."""
import json
import socket


def handler(event, context):
    name, key = event["scratch"].split("#")
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as log:
        log.connect("\0" + name)
        log.sendall(f"read {key}\n".encode())
        answer = b""
        while chunk := log.recv(65536):
            answer += chunk
    return len(json.loads(answer))
