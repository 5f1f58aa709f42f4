def handler(event, context):
    if event["bad"]:
        raise RuntimeError(f"item {event['id']} is bad")
    return event["id"]
