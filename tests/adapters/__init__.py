"""The adapters to real clients: Kafka (kafka-python, aiokafka)."""
