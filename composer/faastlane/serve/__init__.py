"""``faastlane serve``: a composed workflow behind local Lambda and OpenWhisk endpoints.

:mod:`.warm_action` is the child process that keeps the action loaded (the action
server's launcher protocol); :mod:`.workflow` talks to it; :mod:`.lambda_api` and
:mod:`.openwhisk_api` answer each platform's REST calls; :mod:`.endpoint` is the HTTP
server that routes to them; :mod:`.commands` the command.
"""
