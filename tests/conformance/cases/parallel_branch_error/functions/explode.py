def handler(event, context):
    raise ZeroDivisionError("branch two divided by zero")
