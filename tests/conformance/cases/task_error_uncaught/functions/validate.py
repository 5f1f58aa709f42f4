class InvalidOrder(Exception):
    """A domain error: Step Functions names it after the class."""


def handler(event, context):
    if event["order"]["qty"] < 0:
        raise InvalidOrder(f"quantity {event['order']['qty']} is negative")
    return event
