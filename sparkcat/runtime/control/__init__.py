"""What the driver decides: the herder, the config log as read, leadership among drivers, the offsets API."""
