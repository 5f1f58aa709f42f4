def handler(event, context):
    return {"unique": set(event["tags"])}
