def handler(event, context):
    results = {"str": "plain text", "float": 2.5, "none": None, "list": [1, "two", None, True]}
    return results[event["kind"]]
