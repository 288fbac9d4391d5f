"""Cut and transcode clips with ffmpeg."""

__version__ = "1.2.0"
