def handler(event, context):
    raise ValueError("bad value")
