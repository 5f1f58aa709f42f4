"""How the platforms and the local runner call a composed action: the OpenWhisk
and Lambda entry points, the local runner, and the OpenWhisk action server.
"""
