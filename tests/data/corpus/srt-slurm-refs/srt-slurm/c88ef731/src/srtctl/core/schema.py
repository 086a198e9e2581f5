class DynamoConfig:
    request_plane: str = "tcp"
