def handler(event, context):
    items = event["items"]
    return {"total": sum(items), "sorted": sorted(items), "label": event["label"]}
