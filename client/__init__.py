"""The Flower ClientApp side: a node's data, its privacy budget and its protocol step."""
