# Script mode (cmake -DSOURCE=<dir> -DDEST=<dir> -P ...): copies the .py files of SOURCE
# into DEST, keeping the layout and leaving unchanged files alone — and nothing else (no
# compiled module an in-place build left there, no __pycache__), so the fake-device
# package's own module is never overwritten.
file(GLOB_RECURSE _flock_py RELATIVE ${SOURCE} ${SOURCE}/*.py)
foreach(_file IN LISTS _flock_py)
  if(NOT _file MATCHES "__pycache__")
    get_filename_component(_dir ${DEST}/${_file} DIRECTORY)
    file(MAKE_DIRECTORY ${_dir})
    configure_file(${SOURCE}/${_file} ${DEST}/${_file} COPYONLY)
  endif()
endforeach()
