def handler(event, context):
    if event < 0:
        raise ValueError(f"{event} is negative")
    return event
