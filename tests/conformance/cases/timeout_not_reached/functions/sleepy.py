import time


def handler(event, context):
    time.sleep(event.get("sleep", 2.5))
    return {"slept": True}
