"""What a picture shows, as plain data: the shapes of a frame, the drawing adapters of the
systems, the polygons of the walls. No graphics library is imported here; `granular.render`
draws them."""
