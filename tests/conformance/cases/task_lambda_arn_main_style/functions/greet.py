"""An OpenWhisk action: main(params) returns a dict."""


def main(params):
    return {"greeting": "hello " + params["name"], "length": len(params["name"])}
