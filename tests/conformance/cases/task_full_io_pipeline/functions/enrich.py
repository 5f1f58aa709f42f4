def handler(event, context):
    return {"score": sum(event["nested"]["raw"]) * event["factor"], "seen": event,
            "extra": "dropped"}
