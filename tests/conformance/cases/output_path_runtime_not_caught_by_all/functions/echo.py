def handler(event, context):
    return {"echoed": event}
