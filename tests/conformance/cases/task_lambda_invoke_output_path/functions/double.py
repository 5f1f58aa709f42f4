def handler(event, context):
    return {"value": event["value"] * 2}
