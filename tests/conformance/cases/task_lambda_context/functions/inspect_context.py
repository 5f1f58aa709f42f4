def handler(event, context):
    remaining = context.get_remaining_time_in_millis()
    return {
        "function_name": context.function_name,
        "has_request_id": isinstance(context.aws_request_id, str)
        and len(context.aws_request_id) > 0,
        "remaining_positive": isinstance(remaining, int) and remaining > 0,
        "arn_names_function": context.invoked_function_arn.startswith("arn:aws:lambda:"),
        "memory_is_text": isinstance(context.memory_limit_in_mb, str),
    }
