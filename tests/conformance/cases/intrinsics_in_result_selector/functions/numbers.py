def handler(event, context):
    return {"values": [4, 8, 15, 16, 23, 42]}
