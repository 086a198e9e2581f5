class DynamoConfig:
    request_plane: str = "nats"
