class PaymentDeclined(Exception):
    pass


def handler(event, context):
    raise PaymentDeclined(f"card declined for order {event['order']['id']}")
