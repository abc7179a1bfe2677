# lib/libckgen_dispatch.so: the C API (dispatch/ckgen_dispatch.h) over the registry and the
# dispatcher, linking every kernel of ckgen_kernels. Included by CMakeLists.txt after the
# ckgen_kernels target; copied into the project by ckgen (templates/project/dispatch/).
option(CKGEN_BUILD_DISPATCH "Build lib/libckgen_dispatch.so (C API for ctypes / C callers)" ON)
if(CKGEN_BUILD_DISPATCH)
  # The static kernel library goes into a shared object: position-independent code.
  set_target_properties(ckgen_kernels PROPERTIES POSITION_INDEPENDENT_CODE ON)
  set(_ckgen_dispatch_src ${CMAKE_CURRENT_SOURCE_DIR}/dispatch/ckgen_dispatch.cpp
                          ${CMAKE_CURRENT_SOURCE_DIR}/dispatch/ckgen_dispatch_args.cpp)
  set_source_files_properties(${_ckgen_dispatch_src} PROPERTIES LANGUAGE ${CKGEN_LANG})
  add_library(ckgen_dispatch SHARED ${_ckgen_dispatch_src})
  target_include_directories(ckgen_dispatch PUBLIC ${CMAKE_CURRENT_SOURCE_DIR}/dispatch)
  # registry() (registry.cpp) names every register_<instance>, so the C API pulls every
  # kernel object out of the static library.
  target_link_libraries(ckgen_dispatch PRIVATE ckgen_kernels)
  set_target_properties(ckgen_dispatch PROPERTIES
    CXX_VISIBILITY_PRESET hidden CUDA_VISIBILITY_PRESET hidden VISIBILITY_INLINES_HIDDEN ON)
  target_compile_definitions(ckgen_dispatch PRIVATE CKGEN_DISPATCH_BUILD)
  if(UNIX AND NOT APPLE)
    # Loaded into processes that already hold a C++ runtime (Python with PyTorch): symbols of
    # static archives linked in here (the kernels, and libstdc++ where the toolchain links it
    # statically) stay private, so the .so's own iostream/locale code is not bound to the
    # process's libstdc++ (an ostringstream in ckgen_kernel_info crashed after `import torch`).
    target_link_options(ckgen_dispatch PRIVATE "LINKER:--exclude-libs,ALL")
  endif()
  if(CKGEN_PLATFORM STREQUAL "nvidia")
    # One cudart for the process (the .so, PyTorch and the caller share libcudart.so, so a
    # stream or device pointer of one is valid in the other): link the shared runtime.
    set_target_properties(ckgen_dispatch PROPERTIES CUDA_RUNTIME_LIBRARY Shared)
  endif()
endif()
