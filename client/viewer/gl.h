// polytope-viewer: OpenGL 3.3 declarations. No loader: Mesa's libGL exports every core function, so the
// prototypes of glext.h (through GLFW) are enough.
#pragma once

#ifndef GL_GLEXT_PROTOTYPES
#define GL_GLEXT_PROTOTYPES 1
#endif
#define GLFW_INCLUDE_GLEXT
#include <GLFW/glfw3.h>
