def handler(event, context):
    item = event["item"]
    return {"line": event["index"], "sku": item["sku"],
            "total": item["qty"] * item["unit"], "currency": event["currency"]}
