def handler(event, context):
    return event["a"] + event["b"]
