def main(params):
    return params["n"] + params["offset"]
