def handler(event, context):
    return {"echo": event}
