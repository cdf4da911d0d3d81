def render(schema, header):
    return header + "\n"
