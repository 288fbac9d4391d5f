#include <pybind11/pybind11.h>
#include <cmath>

double haversine(double lat1, double lon1, double lat2, double lon2) {
    const double r = 6371.0;
    double dlat = (lat2 - lat1) * M_PI / 180.0, dlon = (lon2 - lon1) * M_PI / 180.0;
    double a = std::sin(dlat / 2) * std::sin(dlat / 2) +
               std::cos(lat1 * M_PI / 180.0) * std::cos(lat2 * M_PI / 180.0) * std::sin(dlon / 2) * std::sin(dlon / 2);
    return 2 * r * std::asin(std::sqrt(a));
}

PYBIND11_MODULE(_core, m) { m.def("haversine", &haversine); }
