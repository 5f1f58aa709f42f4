def lambda_handler(event, context):
    return {**event, "greeting": event["greeting"].upper() + "!"}
