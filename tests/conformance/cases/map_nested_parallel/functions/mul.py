def main(params):
    return {"product": params["a"] * params["b"]}
