"""Flag validity: every flag a cookbook publishes, checked against the parser of the engine version its cell pins."""
