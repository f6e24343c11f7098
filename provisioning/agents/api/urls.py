from django.urls import path

from . import views

app_name = "agent_api"
urlpatterns = [
    path("checkin", views.checkin, name="checkin"),
    path("poll", views.agent_poll, name="poll"),
    path("commands/<int:command_id>/result", views.command_result, name="command-result"),
    path("commands/<int:command_id>/log", views.command_log, name="command-log"),
]
