"""The shared bases every package stands on: environment and lab-mode reading, the embedded
Redis, system checks, prepared reads, query instrumentation, the WebSocket origin rule and the
REST API's base classes. It imports no other package of the project; greenlight/ above
everything is only the roof (settings, URLs, ASGI/WSGI, Celery)."""
