"""One hop of the hand-off microbenchmark: hands its event on unchanged."""


def handler(event, context):
    return event
